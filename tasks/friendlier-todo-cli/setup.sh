#!/usr/bin/env bash
# Creates todo.py: a working but hostile CLI (tracebacks on every mistake, no help).
set -euo pipefail
cat > todo.py <<'EOF'
#!/usr/bin/env python3
"""todo: a tiny to-do list. Items live in $TODO_FILE (default: ./todo.json)."""

import json
import os
import sys


def todo_path():
    return os.environ.get("TODO_FILE", "todo.json")


def load():
    if not os.path.exists(todo_path()):
        return []
    with open(todo_path(), encoding="utf-8") as fh:
        return json.load(fh)


def save(items):
    with open(todo_path(), "w", encoding="utf-8") as fh:
        json.dump(items, fh, indent=2)


def cmd_add(args):
    items = load()
    text = args[0]
    items.append({"text": text, "done": False})
    save(items)
    print(f"added #{len(items)}: {text}")


def cmd_list(args):
    for number, item in enumerate(load(), start=1):
        mark = "x" if item["done"] else " "
        print(f"{number}. [{mark}] {item['text']}")


def cmd_done(args):
    items = load()
    number = int(args[0])
    items[number - 1]["done"] = True
    save(items)
    print(f"done #{number}: {items[number - 1]['text']}")


COMMANDS = {"add": cmd_add, "list": cmd_list, "done": cmd_done}


def main():
    command = sys.argv[1]
    COMMANDS[command](sys.argv[2:])


if __name__ == "__main__":
    main()
EOF
cat > README.md <<'EOF'
# todo

    python3 todo.py add "buy milk"
    python3 todo.py list
    python3 todo.py done 1
EOF
