python3 - <<'PY'
from pathlib import Path
p = Path("cleanup.py")
src = p.read_text()
anchor = '                        help="only files not modified for this many days (default: 7)")\n'
add = ('    parser.add_argument("--dry-run", action="store_true",\n'
       '                        help="only list what would be deleted; delete nothing")\n')
if "--dry-run" not in src:
    src = src.replace(anchor, anchor + add)
src = src.replace('    python3 cleanup.py DIR [--pattern GLOB] [--older-than DAYS]\n',
                  '    python3 cleanup.py DIR [--pattern GLOB] [--older-than DAYS] [--dry-run]\n')
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("cleanup.py")
src = p.read_text()
old = ('    for path in victims:\n'
       '        path.unlink()\n'
       '        print(f"deleted: {path}")\n')
new = ('    for path in victims:\n'
       '        if args.dry_run:\n'
       '            print(f"would delete: {path}")\n'
       '            continue\n'
       '        path.unlink()\n'
       '        print(f"deleted: {path}")\n')
src = src.replace(old, new)
src = src.replace('    print(f"{len(victims)} file(s) deleted")\n',
                  '    verb = "would be deleted" if args.dry_run else "deleted"\n'
                  '    print(f"{len(victims)} file(s) {verb}")\n')
p.write_text(src)
PY

echo "added --dry-run to cleanup.py: lists 'would delete: <path>' and deletes nothing"
