#!/usr/bin/env bash
# Pass when NoteStore owns the file (API + atomic writes) and no other module touches it.
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_notes.py" tests/test_notes.py
test -f notes/store.py || { echo "FAIL: notes/store.py does not exist"; exit 1; }

out=$(python3 -m unittest -v tests.test_notes 2>&1) || { echo "$out"; echo "FAIL: test suite fails"; exit 1; }
grep -q "Ran 7 tests" <<<"$out"

for f in notes/commands.py notes/search.py notes/export.py notes/cli.py; do
    if grep -nE 'import json|json\.(load|dump)|open\(|read_text|write_text|os\.replace' "$f"; then
        echo "FAIL: $f still handles the notes file itself (above)"
        exit 1
    fi
done
for f in notes/commands.py notes/search.py notes/export.py; do
    grep -q 'NoteStore' "$f" || { echo "FAIL: $f does not use NoteStore"; exit 1; }
done

python3 - <<'PY'
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from notes.export import to_markdown
from notes.search import by_tag, find
from notes.store import NoteStore


class StoreTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        self.path = self.dir / "n.json"

    def test_missing_file_is_empty(self):
        s = NoteStore(self.path)
        self.assertEqual(s.all(), [])
        self.assertIsNone(s.get(1))
        self.assertFalse(s.delete(1))
        self.assertFalse(s.update(1, title="x"))
        self.assertFalse(self.path.exists(), "reading must not create the file")
        self.assertEqual(find(self.path, "x"), [])
        self.assertEqual(by_tag(self.path, "x"), [])

    def test_crud_roundtrip(self):
        s = NoteStore(self.path)
        self.assertEqual(s.add("one", "b1", ["z", "a", "z"]), 1)
        self.assertEqual(s.add("two", "b2"), 2)
        self.assertEqual(s.add("three", "b3"), 3)
        other = NoteStore(str(self.path))  # persisted, and str paths work
        self.assertEqual(other.get(1), {"id": 1, "title": "one", "body": "b1", "tags": ["a", "z"]})
        self.assertEqual([n["id"] for n in other.all()], [1, 2, 3])
        self.assertTrue(other.update(2, title="TWO", body="new"))
        self.assertEqual(s.get(2)["title"], "TWO")
        self.assertEqual(s.get(2)["body"], "new")
        self.assertTrue(s.delete(3))
        self.assertFalse(s.delete(3))
        self.assertEqual(s.add("again", "b"), 3)
        self.assertTrue(s.delete(1))
        self.assertEqual(s.add("four", "b"), 4)
        self.assertEqual([n["id"] for n in s.all()], [2, 3, 4])

    def test_writes_are_atomic(self):
        s = NoteStore(self.path)
        s.add("a", "b")
        with mock.patch("os.replace", wraps=os.replace) as rep:
            s.add("c", "d")
            s.delete(1)
        self.assertGreaterEqual(rep.call_count, 2, "writes do not go through os.replace")
        src, dst = rep.call_args_list[0].args[:2]
        self.assertEqual(Path(dst).resolve(), self.path.resolve())
        self.assertEqual(Path(src).resolve().parent, self.dir.resolve(),
                         "temporary file must be in the same directory")
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["n.json"],
                         "temporary files left behind")

    def test_failed_write_keeps_old_file(self):
        s = NoteStore(self.path)
        s.add("keep", "me")
        before = self.path.read_bytes()
        with mock.patch("os.replace", side_effect=OSError("disk full")):
            with self.assertRaises(OSError):
                s.add("lost", "x")
        self.assertEqual(self.path.read_bytes(), before)

    def test_modules_agree(self):
        s = NoteStore(self.path)
        s.add("Alpha", "first body", ["t"])
        s.add("Beta", "second", [])
        self.assertEqual(find(self.path, "BODY"), [1])
        self.assertEqual(by_tag(self.path, "t"), [1])
        self.assertEqual(to_markdown(self.path), "## Alpha\n\nfirst body\n\n#t\n\n## Beta\n\nsecond\n")


r = unittest.TextTestRunner(verbosity=1).run(unittest.defaultTestLoader.loadTestsFromTestCase(StoreTest))
raise SystemExit(0 if r.wasSuccessful() else 1)
PY

# the CLI end to end
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NOTES_FILE="$tmp/notes.json"
[ "$(python3 -m notes.cli list)" = "" ]
[ "$(python3 -m notes.cli add 'Buy milk' 'two litres' --tag home)" = "1" ]
[ "$(python3 -m notes.cli add 'Call Bob' 'about milk')" = "2" ]
[ "$(python3 -m notes.cli list)" = "$(printf '1: Buy milk\n2: Call Bob')" ]
[ "$(python3 -m notes.cli find MILK)" = "$(printf '1\n2')" ]
python3 -m notes.cli rm 1
[ "$(python3 -m notes.cli list)" = "2: Call Bob" ]
if python3 -m notes.cli rm 1 2>/dev/null; then echo "FAIL: rm of a missing note must fail"; exit 1; fi
echo "ok"
