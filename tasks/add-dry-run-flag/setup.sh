#!/usr/bin/env bash
# Creates cleanup.py, a small argparse CLI that deletes old temp files.
set -euo pipefail
mkdir -p tests
cat > cleanup.py <<'EOF'
#!/usr/bin/env python3
"""Delete stale temporary files under a directory.

    python3 cleanup.py DIR [--pattern GLOB] [--older-than DAYS]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

DAY = 86400


def stale_files(root: Path, pattern: str, older_than_days: float, now: float) -> list[Path]:
    """Files under ``root`` matching ``pattern`` not modified for ``older_than_days``."""
    cutoff = now - older_than_days * DAY
    return sorted(p for p in root.rglob(pattern) if p.is_file() and p.stat().st_mtime < cutoff)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Delete stale temporary files.")
    parser.add_argument("directory", type=Path, help="directory to clean (recursively)")
    parser.add_argument("--pattern", default="*.tmp", help="glob of files to consider (default: *.tmp)")
    parser.add_argument("--older-than", type=float, default=7, metavar="DAYS",
                        help="only files not modified for this many days (default: 7)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.directory.is_dir():
        print(f"cleanup: not a directory: {args.directory}", file=sys.stderr)
        return 2
    victims = stale_files(args.directory, args.pattern, args.older_than, time.time())
    for path in victims:
        path.unlink()
        print(f"deleted: {path}")
    print(f"{len(victims)} file(s) deleted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
EOF
touch tests/__init__.py
cat > tests/test_cleanup.py <<'EOF'
import contextlib
import io
import os
import tempfile
import time
import unittest
from pathlib import Path

import cleanup


def touch(path: Path, age_days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    t = time.time() - age_days * cleanup.DAY
    os.utime(path, (t, t))
    return path


class CleanupTest(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp())
        self.old = touch(self.root / "a" / "old.tmp", 10)
        self.new = touch(self.root / "new.tmp", 1)
        self.keep = touch(self.root / "old.log", 30)

    def run_main(self, *argv):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = cleanup.main([str(self.root), *argv])
        return rc, buf.getvalue()

    def test_stale_files(self):
        self.assertEqual(cleanup.stale_files(self.root, "*.tmp", 7, time.time()), [self.old])

    def test_deletes_only_stale_matches(self):
        rc, out = self.run_main()
        self.assertEqual(rc, 0)
        self.assertFalse(self.old.exists())
        self.assertTrue(self.new.exists())
        self.assertTrue(self.keep.exists())
        self.assertEqual(out, f"deleted: {self.old}\n1 file(s) deleted\n")

    def test_pattern_and_age(self):
        rc, _ = self.run_main("--pattern", "*.log", "--older-than", "20")
        self.assertEqual(rc, 0)
        self.assertFalse(self.keep.exists())
        self.assertTrue(self.old.exists())
EOF
