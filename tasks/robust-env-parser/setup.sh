#!/usr/bin/env bash
# Creates envload.py with a naive .env parser and no tests.
set -euo pipefail
cat > envload.py <<'EOF'
"""Load KEY=value settings from a .env file into the environment."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path


def parse_env(text: str) -> dict[str, str]:
    """Parse the contents of a .env file."""
    result = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, value = line.split("=")
        result[key] = value
    return result


def load_env(path: str | Path, environ: MutableMapping[str, str] | None = None,
             override: bool = False) -> dict[str, str]:
    """Set the variables of the .env file at ``path`` into ``environ`` (default: os.environ).

    Variables already set are kept unless ``override``. Returns what was parsed.
    """
    env = os.environ if environ is None else environ
    parsed = parse_env(Path(path).read_text(encoding="utf-8"))
    for key, value in parsed.items():
        if override or key not in env:
            env[key] = value
    return parsed
EOF
cat > example.env <<'EOF'
# local development settings
export APP_ENV=development
DB_URL=postgres://app:secret@localhost/app?sslmode=disable
GREETING="Hello,\tworld"   # tab in the middle
EOF
