set -euo pipefail
python3 - <<'PY'
from pathlib import Path
p = Path("updater/versions.py")
src = p.read_text()
src = src.replace("    return tuple(parts)\n", "    return tuple(int(p) for p in parts)\n")
p.write_text(src)
PY

echo "parse_version now returns integers, so 1.10.0 sorts after 1.9.2 (updater/versions.py)"
