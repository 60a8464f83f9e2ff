#!/usr/bin/env bash
# Hidden checks for parse_env / load_env (the workspace ships without tests).
set -euo pipefail
cd "$WORK_DIR"
export PYTHONDONTWRITEBYTECODE=1
test -f envload.py

python3 - <<'PY'
import re
import tempfile
import unittest
from pathlib import Path

from envload import load_env, parse_env


class Hidden(unittest.TestCase):
    def test_trivial_still_works(self):
        self.assertEqual(parse_env("A=1\nB=2\n"), {"A": "1", "B": "2"})

    def test_blank_and_comment_lines(self):
        text = "\n# a comment\n   # indented comment\nA=1\n\n\t\nB=2\n"
        self.assertEqual(parse_env(text), {"A": "1", "B": "2"})

    def test_crlf(self):
        self.assertEqual(parse_env("A=1\r\n# c\r\nB=two\r\n"), {"A": "1", "B": "two"})

    def test_export_prefix(self):
        self.assertEqual(parse_env("export FOO=bar\nexport  BAZ = qux\n"), {"FOO": "bar", "BAZ": "qux"})

    def test_whitespace(self):
        self.assertEqual(parse_env("  FOO =  bar baz  \n"), {"FOO": "bar baz"})

    def test_equals_in_value(self):
        url = "postgres://u:p@db/app?sslmode=require&x=1"
        self.assertEqual(parse_env(f"DB_URL={url}\nB64=YWJj==\n"), {"DB_URL": url, "B64": "YWJj=="})

    def test_empty_values(self):
        self.assertEqual(parse_env("A=\nB=''\nC=\"\"\nD=   # nothing\n"), {"A": "", "B": "", "C": "", "D": ""})

    def test_single_quotes_literal(self):
        text = r"""MSG='no #comment, no $expansion, no \n escape'""" + "\n"
        self.assertEqual(parse_env(text), {"MSG": r"no #comment, no $expansion, no \n escape"})

    def test_double_quote_escapes(self):
        text = r'''A="line1\nline2"
B="tab\there"
C="say \"hi\""
D="back\\slash"
E="a # not a comment"
'''
        self.assertEqual(parse_env(text), {
            "A": "line1\nline2", "B": "tab\there", "C": 'say "hi"', "D": "back\\slash",
            "E": "a # not a comment",
        })

    def test_comment_after_quoted_value(self):
        self.assertEqual(parse_env("NAME=\"x y\"  # why\nOTHER='z' #c\n"), {"NAME": "x y", "OTHER": "z"})

    def test_inline_comments_unquoted(self):
        text = "A=value # comment\nB=a#b\nC=x\t# tabbed\nD=#start\n"
        self.assertEqual(parse_env(text), {"A": "value", "B": "a#b", "C": "x", "D": "#start"})

    def test_last_definition_wins(self):
        self.assertEqual(parse_env("A=1\nB=x\nA=2\n"), {"A": "2", "B": "x"})

    def test_valid_keys(self):
        self.assertEqual(parse_env("_X=1\nx9_Y=2\n"), {"_X": "1", "x9_Y": "2"})

    def test_errors_name_the_line(self):
        bad = {
            "A=1\n\n# c\njust some words\n": 4,
            "A=1\n9LIVES=cat\n": 2,
            "OK=1\nMY-KEY=1\n": 2,
            "=nokey\n": 1,
            "A=1\nB=2\nC=3\nQ='unterminated\n": 4,
            'A=1\nQ="unterminated\n': 2,
            'A=1\nQ="ends with escaped quote\\"\n': 2,
        }
        for text, line in bad.items():
            with self.subTest(text=text):
                with self.assertRaises(ValueError) as cm:
                    parse_env(text)
                self.assertRegex(str(cm.exception), rf"(?<!\d){line}(?!\d)",
                                 f"error message does not name line {line}")

    def test_load_env_semantics(self):
        path = Path(tempfile.mkdtemp()) / ".env"
        path.write_text("# settings\nexport A=new\nB=\"b b\"\n", encoding="utf-8")
        env = {"A": "old"}
        parsed = load_env(path, env)
        self.assertEqual(parsed, {"A": "new", "B": "b b"})
        self.assertEqual(env, {"A": "old", "B": "b b"})
        load_env(path, env, override=True)
        self.assertEqual(env, {"A": "new", "B": "b b"})
        load_env(str(path), environ=env)


r = unittest.TextTestRunner(verbosity=1).run(unittest.defaultTestLoader.loadTestsFromTestCase(Hidden))
raise SystemExit(0 if r.wasSuccessful() else 1)
PY

# the shipped example must parse
python3 -c '
import envload
env = envload.parse_env(open("example.env", encoding="utf-8").read())
assert env == {"APP_ENV": "development",
               "DB_URL": "postgres://app:secret@localhost/app?sslmode=disable",
               "GREETING": "Hello,\tworld"}, env
'
echo "ok"
