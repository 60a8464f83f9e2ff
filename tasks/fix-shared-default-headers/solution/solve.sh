set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("minihttp/request.py")
src = p.read_text()
src = src.replace("headers: dict[str, str] = {},", "headers: dict[str, str] | None = None,")
src = src.replace("        self.headers = headers\n", "        self.headers = dict(headers or {})\n")
p.write_text(src)
PY

echo "Request no longer shares a mutable default headers dict and copies the caller's dict"
