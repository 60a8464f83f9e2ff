set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("listing/pager.py")
src = p.read_text()
src = src.replace("    return max(1, total // per_page)\n",
                  "    return max(1, -(-total // per_page))  # ceiling division\n")
p.write_text(src)
PY

echo "page_count now rounds up, so a partial last page counts (listing/pager.py)"
