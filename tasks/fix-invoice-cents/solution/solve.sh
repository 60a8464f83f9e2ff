python3 - <<'PY'
from pathlib import Path
p = Path("billing/money.py")
src = p.read_text()
src = src.replace("from __future__ import annotations\n",
                  "from __future__ import annotations\n\nfrom decimal import Decimal, InvalidOperation\n", 1)
src = src.replace("    return int(float(text) * 100)\n",
                  "    try:\n        amount = Decimal(text)\n    except InvalidOperation:\n"
                  "        raise ValueError(f\"not a price: {price!r}\") from None\n"
                  "    return int((amount * 100).to_integral_value())\n")
p.write_text(src)
PY

sed -i 's/out.append(f"TOTAL \${self.total_cents \/ 100}")/out.append(f"TOTAL {format_cents(self.total_cents)}")/' billing/invoice.py

echo "to_cents parses with Decimal (no float truncation); the invoice total uses format_cents"
