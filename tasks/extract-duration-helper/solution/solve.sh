cat > jobs/durations.py <<'PY'
"""Duration strings ("90s", "15m", "2h", "1d", or bare seconds "45") to seconds."""
from __future__ import annotations
import re
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
def parse_duration(text: str) -> int:
    """Seconds in ``text``; raises ValueError when it is not a positive duration."""
    match = _DURATION.match(text.lower())
    if not match:
        raise ValueError(f"bad duration: {text!r}")
    value, unit = match.groups()
    seconds = int(value) * _UNIT_SECONDS[unit]
    if seconds <= 0:
        raise ValueError(f"duration must be positive: {text!r}")
    return seconds
PY

python3 - <<'PY'
import re
from pathlib import Path
p = Path("jobs/scheduler.py")
src = p.read_text()
start = src.index("import re\n")
end = src.index("@dataclass(frozen=True)")
src = src[:start] + "from dataclasses import dataclass\n\nfrom jobs.durations import parse_duration\n\n\n" + src[end:]
src = src.replace("from dataclasses import dataclass\n\nfrom dataclasses import dataclass\n", "from dataclasses import dataclass\n", 1)
src = src.replace("_interval_seconds(self.every)", "parse_duration(self.every)")
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("jobs/retry.py")
src = p.read_text()
start = src.index("import re\n")
end = src.index("class Backoff:")
src = src[:start] + "from jobs.durations import parse_duration\n\n\n" + src[end:]
src = src.replace("parse_delay(", "parse_duration(")
p.write_text(src)
PY

echo "extracted parse_duration into jobs/durations.py; scheduler.py and retry.py now use it"
