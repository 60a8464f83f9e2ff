sed -i 's/^from statkit.spread import stdev, variance$/from statkit.spread import percentile, stdev, variance/' statkit/__init__.py

sed -i 's/^__all__ = \["mean", "median", "stdev", "variance"\]$/__all__ = ["mean", "median", "percentile", "stdev", "variance"]/' statkit/__init__.py

sed -i 's/^__version__ = "0.3.0"$/__version__ = "0.4.0"/' statkit/__init__.py

python3 - <<'PY'
from pathlib import Path
p = Path("CHANGELOG.md")
src = p.read_text()
if "## 0.4.0" not in src:
    p.write_text(src.replace("# Changelog\n\n", "# Changelog\n\n## 0.4.0\n- `percentile` is exported from `statkit`.\n\n", 1))
PY

echo "exported percentile from statkit (import + __all__), bumped __version__ to 0.4.0, noted it in CHANGELOG.md"
