set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("crm/contacts.py")
src = p.read_text()
old = "    value = value.strip().lower()\n"
if "if value is None:" not in src:
    src = src.replace(old, "    if value is None:\n        return None\n" + old)
p.write_text(src)
PY

echo "normalize_email now returns None for a missing e-mail instead of crashing (crm/contacts.py)"
