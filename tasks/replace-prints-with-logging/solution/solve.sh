python3 - <<'PY'
from pathlib import Path
p = Path("etl/extract.py")
src = p.read_text()
src = src.replace("import csv\nimport io\n", "import csv\nimport io\nimport logging\n\nlog = logging.getLogger(__name__)\n", 1)
src = src.replace('    print("extract: reading CSV")', '    log.debug("extract: reading CSV")')
src = src.replace('    print(f"extract: got {len(rows)} rows")', '    log.debug("extract: got %d rows", len(rows))')
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("etl/transform.py")
src = p.read_text()
src = src.replace("from __future__ import annotations\n", "from __future__ import annotations\n\nimport logging\n\nlog = logging.getLogger(__name__)\n", 1)
src = src.replace('        print(f"WARNING: transform: skipped {skipped} invalid row(s)")', '        log.warning("transform: skipped %d invalid row(s)", skipped)')
src = src.replace('    print(f"transform: {len(out)} clean rows")', '    log.debug("transform: %d clean rows", len(out))')
src = src.replace('    print(f"transform: {len(result)} regions")', '    log.debug("transform: %d regions", len(result))')
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("etl/load.py")
src = p.read_text()
src = src.replace("from __future__ import annotations\n", "from __future__ import annotations\n\nimport logging\n\nlog = logging.getLogger(__name__)\n", 1)
src = src.replace('    print(f"load: writing {len(totals)} rows")', '    log.debug("load: writing %d rows", len(totals))')
p.write_text(src)
PY

echo "etl/extract.py, transform.py and load.py now log via logging.getLogger(__name__) instead of printing"
