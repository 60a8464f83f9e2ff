#!/usr/bin/env bash
# Pass when NoteStore owns the file (API + atomic writes) and no other module touches it.
# The checks are judged by gatecheck.py outside the checked code's process (README.md,
# "Writing tasks").
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1

cmp "$TASK_DIR/starting/tests/test_notes.py" tests/test_notes.py
test -f notes/store.py || { echo "FAIL: notes/store.py does not exist"; exit 1; }

for f in notes/commands.py notes/search.py notes/export.py notes/cli.py; do
    if grep -nE 'import json|json\.(load|dump)|open\(|read_text|write_text|os\.replace' "$f"; then
        echo "FAIL: $f still handles the notes file itself (above)"
        exit 1
    fi
done
for f in notes/commands.py notes/search.py notes/export.py; do
    grep -q 'NoteStore' "$f" || { echo "FAIL: $f does not use NoteStore"; exit 1; }
done

python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
shipped_tests("tests.test_notes", ran=7)
do("""
import os, tempfile
from pathlib import Path
from unittest import mock
from notes.export import to_markdown
from notes.search import by_tag, find
from notes.store import NoteStore

def fresh():
    folder = Path(tempfile.mkdtemp())
    return folder, folder / "n.json"
""")
# a missing file is empty, and reading never creates it
do("folder, path = fresh(); s = NoteStore(path)")
expect("[s.all(), s.get(1), s.delete(1), s.update(1, title='x')]", [[], None, False, False])
expect("[path.exists(), find(path, 'x'), by_tag(path, 'x')]", [False, [], []])
# create, read, update, delete; persisted, and str paths work
do("folder, path = fresh(); s = NoteStore(path)")
expect("[s.add('one', 'b1', ['z', 'a', 'z']), s.add('two', 'b2'), s.add('three', 'b3')]", [1, 2, 3])
do("other = NoteStore(str(path))")
expect("other.get(1)", {"id": 1, "title": "one", "body": "b1", "tags": ["a", "z"]})
expect("[n['id'] for n in other.all()]", [1, 2, 3])
expect("other.update(2, title='TWO', body='new')", True)
expect("[s.get(2)['title'], s.get(2)['body']]", ["TWO", "new"])
expect("[s.delete(3), s.delete(3), s.add('again', 'b'), s.delete(1), s.add('four', 'b')]",
       [True, False, 3, True, 4])
expect("[n['id'] for n in s.all()]", [2, 3, 4])
# titles drawn afresh each run (rng) come back as written
titles = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 12))) for _ in range(4)]
do("folder, path = fresh(); s = NoteStore(path)")
expect(f"[s.add(t, 'b') for t in {titles!r}]", [1, 2, 3, 4])
expect("[n['title'] for n in NoteStore(path).all()]", titles)
# writes are atomic: a temporary file in the same folder, moved over with os.replace
do("""
folder, path = fresh(); s = NoteStore(path); s.add("a", "b")
with mock.patch("os.replace", wraps=os.replace) as rep:
    s.add("c", "d")
    s.delete(1)
moves = [[str(Path(a).resolve()) for a in c.args[:2]] for c in rep.call_args_list]
""")
moves, folder = ask("moves"), ask("str(folder.resolve())")
check(len(moves) >= 2, f"writes do not go through os.replace: {moves}")
check(moves[0][1] == folder + "/n.json", f"os.replace's target is not the notes file: {moves}")
check(moves[0][0].rsplit("/", 1)[0] == folder, f"temporary file must be in the same directory: {moves}")
expect("sorted(p.name for p in folder.iterdir())", ["n.json"])
# a failed write keeps the old file
do("""
folder, path = fresh(); s = NoteStore(path); s.add("keep", "me")
before = path.read_bytes()
with mock.patch("os.replace", side_effect=OSError("disk full")):
    try:
        s.add("lost", "x")
        failed = None
    except OSError as exc:
        failed = str(exc)
""")
expect("[failed, path.read_bytes() == before]", ["disk full", True])
# the modules agree on the store
do("folder, path = fresh(); s = NoteStore(path); s.add('Alpha', 'first body', ['t']); s.add('Beta', 'second', [])")
expect("[find(path, 'BODY'), by_tag(path, 't')]", [[1], [1]])
expect("to_markdown(path)", "## Alpha\n\nfirst body\n\n#t\n\n## Beta\n\nsecond\n")
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
