"""python3 -m notes.cli COMMAND ...: the notebook's command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from notes.commands import add_note, delete_note
from notes.export import to_markdown
from notes.search import find


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="notes")
    sub = parser.add_subparsers(dest="command", required=True)
    p_add = sub.add_parser("add")
    p_add.add_argument("title")
    p_add.add_argument("body")
    p_add.add_argument("--tag", action="append", default=[])
    sub.add_parser("list")
    p_find = sub.add_parser("find")
    p_find.add_argument("query")
    sub.add_parser("export")
    p_rm = sub.add_parser("rm")
    p_rm.add_argument("id", type=int)
    args = parser.parse_args(argv)
    path = Path(os.environ.get("NOTES_FILE", "notes.json"))

    if args.command == "add":
        print(add_note(path, args.title, args.body, args.tag))
    elif args.command == "list":
        notes = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
        for note in sorted(notes, key=lambda n: n["id"]):
            print(f"{note['id']}: {note['title']}")
    elif args.command == "find":
        for note_id in find(path, args.query):
            print(note_id)
    elif args.command == "export":
        sys.stdout.write(to_markdown(path))
    elif args.command == "rm":
        if not delete_note(path, args.id):
            print(f"notes: no note {args.id}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
