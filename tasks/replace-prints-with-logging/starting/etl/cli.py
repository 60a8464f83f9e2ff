"""python3 -m etl.cli FILE: per-region totals of a sales CSV, as CSV on stdout."""

from __future__ import annotations

import sys
from pathlib import Path

from etl.extract import extract
from etl.load import to_csv
from etl.transform import clean, totals


def run(text: str) -> str:
    return to_csv(totals(clean(extract(text))))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 -m etl.cli FILE", file=sys.stderr)
        return 2
    sys.stdout.write(run(Path(argv[0]).read_text(encoding="utf-8")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
