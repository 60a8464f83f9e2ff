set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("textkit/slug.py")
src = p.read_text()
old = "    return _NON_WORD.sub(sep, text)\n"
if old in src:
    p.write_text(src.replace(old, "    return _NON_WORD.sub(sep, text).strip(sep)\n"))
PY

echo "slugify now strips leading/trailing separators (textkit/slug.py)"
