python3 - <<'PY'
from pathlib import Path
p = Path("envload.py")
src = p.read_text()
start = src.index("def parse_env(")
end = src.index("def load_env(")
new = '''_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\\Z")
_INLINE_COMMENT = re.compile(r"\\s#")
def _double_quoted(body: str, lineno: int) -> tuple[str, str]:
    """(value, rest of the line) for the text after an opening double quote."""
    end = body.find('"')
    if end < 0:
        raise ValueError(f"line {lineno}: unterminated double-quoted value")
    return body[:end], body[end + 1:]
def _value(original: str, lineno: int) -> str:
    raw = original.strip()
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        if quote == "'":
            end = raw.find("'", 1)
            if end < 0:
                raise ValueError(f"line {lineno}: unterminated single-quoted value")
            value, rest = raw[1:end], raw[end + 1:]
        else:
            value, rest = _double_quoted(raw[1:], lineno)
        rest = rest.strip()
        if rest and not rest.startswith("#"):
            raise ValueError(f"line {lineno}: unexpected text after the closing quote: {rest!r}")
        return value
    match = _INLINE_COMMENT.search(original)
    return (original[:match.start()] if match else original).strip()
def parse_env(text: str) -> dict[str, str]:
    """Parse the contents of a .env file (see the module docstring for the syntax)."""
    result: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export ") or stripped.startswith("export\\t"):
            stripped = stripped[len("export"):].lstrip()
        key, sep, raw = stripped.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"line {lineno}: expected KEY=value, got {line.strip()!r}")
        if not _KEY.match(key):
            raise ValueError(f"line {lineno}: invalid variable name {key!r}")
        result[key] = _value(raw, lineno)
    return result
'''
src = src[:start] + new + "\n\n" + src[end:]
src = src.replace("import os\n", "import os\nimport re\n", 1)
p.write_text(src)
PY

python3 - <<'PY'
from pathlib import Path
p = Path("envload.py")
src = p.read_text()
start = src.index("def _double_quoted(")
end = src.index("def _value(")
new = '''_ESCAPES = {"n": "\\n", "t": "\\t", '"': '"', "\\\\": "\\\\"}
def _double_quoted(body: str, lineno: int) -> tuple[str, str]:
    """(value, rest of the line) for the text after an opening double quote; decodes escapes."""
    out = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\\\" + nxt))
            i += 2
            continue
        if char == '"':
            return "".join(out), body[i + 1:]
        out.append(char)
        i += 1
    raise ValueError(f"line {lineno}: unterminated double-quoted value")
'''
p.write_text(src[:start] + new + src[end:])
PY

python3 - <<'PY'
from pathlib import Path
p = Path("envload.py")
src = p.read_text()
doc = '''"""Load KEY=value settings from a .env file into the environment.
Syntax: blank lines and ``#`` comments are ignored; an optional ``export`` prefix; whitespace
around key, ``=`` and value is ignored; single quotes are literal; double quotes decode
``\\\\n \\\\t \\\\" \\\\\\\\``; unquoted values end at a whitespace-preceded ``#``. Later keys win.
Malformed lines raise ValueError naming the 1-based line number.
"""
'''
first = src.index('"""', 3) + 4
p.write_text(doc + src[first:])
PY

mkdir -p tests && touch tests/__init__.py && cat > tests/test_envload.py <<'PY'
import tempfile
import unittest
from pathlib import Path
from envload import load_env, parse_env
class ParseEnvTest(unittest.TestCase):
    def test_basics(self):
        text = '# c\n\nexport A=1\nB = two words \nC=x=y\nD=\nE=a#b # note\n'
        self.assertEqual(parse_env(text), {"A": "1", "B": "two words", "C": "x=y", "D": "", "E": "a#b"})
    def test_quotes(self):
        text = r"""S='lit $x #y'
D="a\tb\n\"q\" \\"  # c
"""
        self.assertEqual(parse_env(text), {"S": "lit $x #y", "D": 'a\tb\n"q" \\'})
    def test_errors_name_the_line(self):
        for text in ["A=1\nnonsense\n", "A=1\n1X=2\n", "A=1\nB='open\n", 'A=1\nB="open\n']:
            with self.subTest(text=text), self.assertRaisesRegex(ValueError, r"\b2\b"):
                parse_env(text)
    def test_load_env_keeps_existing(self):
        path = Path(tempfile.mkdtemp()) / ".env"
        path.write_text("A=new\nB=b\n")
        env = {"A": "old"}
        load_env(path, env)
        self.assertEqual(env, {"A": "old", "B": "b"})
        load_env(path, env, override=True)
        self.assertEqual(env["A"], "new")
PY
python3 -m unittest tests.test_envload >/dev/null 2>&1 || echo "warning: new tests fail" >&2

echo "parse_env now handles comments, export, quotes and escapes, '=' in values and reports bad lines by number; added tests/test_envload.py"
