python3 - <<'PY'
from pathlib import Path
p = Path("todo.py")
src = p.read_text()
start = src.index("COMMANDS = {")
end = src.index('if __name__ == "__main__":')
new_main = '''COMMANDS = {"add": cmd_add, "list": cmd_list, "done": cmd_done}
def build_parser():
    import argparse
    parser = argparse.ArgumentParser(
        prog="todo.py",
        description="A tiny to-do list. Items are stored in $TODO_FILE (default: ./todo.json).",
        epilog='example: todo.py add "buy milk" && todo.py list && todo.py done 1')
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p_add = sub.add_parser("add", help="add an item")
    p_add.add_argument("text", nargs="+", help="what to do")
    sub.add_parser("list", help="show all items with their numbers")
    p_done = sub.add_parser("done", help="mark an item as done")
    p_done.add_argument("number", type=int, help="item number, as shown by list")
    return parser
def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "add":
        cmd_add([" ".join(args.text)])
    elif args.command == "list":
        cmd_list([])
    else:
        cmd_done([str(args.number)])
    return 0
'''
src = src[:start] + new_main.replace("\n\n", "\n") + "\n\n" + src[end:]
src = src.replace('if __name__ == "__main__":\n    main()\n', 'if __name__ == "__main__":\n    sys.exit(main())\n')
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("todo.py")
src = p.read_text()
old = "    number = int(args[0])\n    items[number - 1][\"done\"] = True\n"
new = ("    number = int(args[0])\n"
       "    if not 1 <= number <= len(items):\n"
       "        have = f\"items are numbered 1 to {len(items)}\" if items else \"the list is empty\"\n"
       "        sys.exit(f\"todo.py: no item #{number} ({have}; see 'todo.py list')\")\n"
       "    items[number - 1][\"done\"] = True\n")
src = src.replace(old, new)
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("todo.py")
src = p.read_text()
old = "    with open(todo_path(), encoding=\"utf-8\") as fh:\n        return json.load(fh)\n"
new = ("    try:\n"
       "        with open(todo_path(), encoding=\"utf-8\") as fh:\n"
       "            return json.load(fh)\n"
       "    except (OSError, ValueError) as exc:\n"
       "        sys.exit(f\"todo.py: cannot read {todo_path()}: {exc}\")\n")
src = src.replace(old, new)
p.write_text(src)
PY

echo "todo.py now uses argparse (--help, per-command help, clear errors for unknown commands/missing args) and reports bad item numbers and unreadable files without tracebacks"
