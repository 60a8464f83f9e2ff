#!/usr/bin/env bash
# Pass when the shipped tests pass unchanged and versions compare numerically. The checks are
# judged by gatecheck.py outside the checked code's process (README.md, "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_versions.py" tests/test_versions.py

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_versions", ran=5, names=("test_multi_digit_components",))
do("from updater.versions import is_newer, latest, parse_version")
expect('parse_version("v1.20")', (1, 20, 0))
expect('parse_version(" 10.0.3 ")', (10, 0, 3))
for bad in ["", "1.2.3.4", "one.two", "1..2"]:
    check("ValueError" in raised(f"parse_version({bad!r})"), f"parse_version({bad!r}) must raise ValueError")
for a, b, newer in [("10.0.0", "9.99.99", True), ("9.99.99", "10.0.0", False), ("0.0.11", "0.0.2", True),
                    ("v3.1", "3.1.0", False), ("1.10.0", "1.9.2", True), ("1.2.3", "1.2.3", False)]:
    expect(f"is_newer({a!r}, {b!r})", newer)
expect('latest(["0.9", "0.10", "0.2"])', "0.10")


# versions drawn afresh each run (rng): their order is known to nobody in advance
def version():
    return rng.choice(["", "v"]) + ".".join(str(rng.randint(0, 120)) for _ in range(rng.randint(1, 3)))


def key(text):
    parts = [int(p) for p in text.lstrip("v").split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


for _ in range(40):
    a, b = version(), version()
    expect(f"is_newer({a!r}, {b!r})", key(a) > key(b))
    expect(f"parse_version({a!r})", key(a))
many = [version() for _ in range(8)]
expect(f"latest({many!r})", max(many, key=key))
PY
