import contextlib
import io
import json
import os
import tempfile
import unittest
from pathlib import Path

from notes import cli
from notes.commands import add_note, delete_note, rename_note
from notes.export import to_markdown
from notes.search import by_tag, find


class NotesTest(unittest.TestCase):
    def setUp(self):
        self.path = Path(tempfile.mkdtemp()) / "notes.json"

    def test_add_assigns_increasing_ids(self):
        self.assertEqual(add_note(self.path, "a", "x"), 1)
        self.assertEqual(add_note(self.path, "b", "y", ["t2", "t1", "t2"]), 2)
        saved = json.loads(self.path.read_text())
        self.assertEqual(saved[1], {"id": 2, "title": "b", "body": "y", "tags": ["t1", "t2"]})

    def test_ids_continue_after_delete(self):
        add_note(self.path, "a", "x")
        add_note(self.path, "b", "x")
        self.assertTrue(delete_note(self.path, 2))
        self.assertFalse(delete_note(self.path, 2))
        self.assertEqual(add_note(self.path, "c", "x"), 2)

    def test_rename(self):
        add_note(self.path, "old", "x")
        self.assertTrue(rename_note(self.path, 1, "new"))
        self.assertFalse(rename_note(self.path, 9, "new"))
        self.assertIn("## new", to_markdown(self.path))

    def test_search(self):
        add_note(self.path, "Groceries", "milk, eggs", ["home"])
        add_note(self.path, "Standup", "talk about MILK budget", ["work"])
        add_note(self.path, "Ideas", "none", ["home", "work"])
        self.assertEqual(find(self.path, "milk"), [1, 2])
        self.assertEqual(by_tag(self.path, "home"), [1, 3])

    def test_export(self):
        add_note(self.path, "T", "B", ["x"])
        add_note(self.path, "U", "C")
        self.assertEqual(to_markdown(self.path), "## T\n\nB\n\n#x\n\n## U\n\nC\n")

    def test_export_without_file(self):
        self.assertEqual(to_markdown(self.path), "")

    def test_cli_list(self):
        add_note(self.path, "first", "x")
        add_note(self.path, "second", "x")
        buf = io.StringIO()
        old = os.environ.get("NOTES_FILE")
        os.environ["NOTES_FILE"] = str(self.path)
        try:
            with contextlib.redirect_stdout(buf):
                self.assertEqual(cli.main(["list"]), 0)
        finally:
            if old is None:
                del os.environ["NOTES_FILE"]
            else:
                os.environ["NOTES_FILE"] = old
        self.assertEqual(buf.getvalue(), "1: first\n2: second\n")
