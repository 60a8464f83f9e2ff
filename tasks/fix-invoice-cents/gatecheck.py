"""A task's checks, judged where the checked code cannot reach them (stdlib only).

    python3 -I -S "$TASK_DIR/gatecheck.py" - <<'PY'
    do("from wordcount import count_words")
    expect("count_words('a  b')", 2)
    PY

Why: a verifier that decides on an exit status or on fixed text ("OK", "Ran 5 tests") is
decided by the code it checks. That code runs inside the checking process as soon as it is
imported: it can ``os._exit(0)``, print the text, patch ``unittest``, and a ``unittest.py``
left in the workspace shadows the standard library's when the workspace comes first on
``sys.path``. A nonce handed to that process does not help: the code reads it (argv, the
environment, its own memory and file descriptors).

How: the checks (the file named, or stdin for ``-``) run in THIS process, which never imports
the workspace: ``-I`` keeps the current directory, the script's directory and ``PYTHON*``
variables off ``sys.path``, ``-S`` keeps site-packages (and any ``.pth`` planted there) out.
The checked code runs in a second process, the worker, started here with ``-I -B`` and the
workspace placed after the standard library on its ``sys.path`` (a planted ``unittest.py``
cannot shadow the real one; ``PYTHONPATH`` is ignored: a checks file that needs ``src/`` says
so, ``do("import sys; sys.path.insert(0, 'src')")``). The worker only runs what it is asked,
one request at a time (``do``, ``ask``), and answers with plain data (None, bool, int, float,
str and lists, tuples, sets and dicts of them, by exact type, so no object can compare equal to
everything); every comparison is made here, against expected values the worker never receives.
So whatever the checked code does, it can only hand back values, and a value is right when the
code computes it. Inputs drawn from ``rng`` (seeded from /dev/urandom each run: the nonce) are
known to nobody in advance, so even their answers cannot be prepared.

Limits (docs: README "Writing tasks"): the worker can read what the verifier's user can,
the task directory included, so code that opens this file's caller, finds the expected values
and returns them, or runs the reference solution at verify time, passes; so does an agent that
can rewrite the interpreter or its standard library. ``shipped_tests`` runs the workspace's
own unittest tests in the worker: their pass is necessary, never sufficient, since the checked
code can forge it.

The checks file gets: ``do(code)``, ``ask(expr)``, ``raised(code)``, ``message(code)``,
``expect(expr, want)``, ``check(ok, why)``, ``shipped_tests(*modules, ran=N, names=(...))``
and ``rng``. Exit 0 with "gatecheck:
N checks passed" only when the whole file ran and made at least one check; exit 1 with the
first failure otherwise.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from typing import Any

WORKER = r'''
import json, os, sys, unittest
requests, replies = os.fdopen(os.dup(0)), os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(2, 1)
cut = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))),
           len(sys.path))
sys.path.insert(cut, os.getcwd())

def plain(v):
    t = type(v)
    if v is None or t in (bool, int, float, str):
        return v
    if t is list:
        return [plain(x) for x in v]
    if t is tuple:
        return {"tuple": [plain(x) for x in v]}
    if t in (set, frozenset):
        return {"set": [plain(x) for x in v]}
    if t is dict:
        return {"dict": [[plain(k), plain(x)] for k, x in v.items()]}
    raise TypeError(f"not plain data: a {t.__module__}.{t.__qualname__}")

def shipped(names):
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    ran = [t.id() for t in _flat(suite)]
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    bad = result.failures + result.errors + [(t, "") for t, _ in result.skipped]
    return {"ran": ran, "count": result.testsRun, "bad": [t.id() for t, _ in bad]}

def _flat(suite):
    for t in suite:
        yield from (_flat(t) if isinstance(t, unittest.TestSuite) else [t])

space = {"__name__": "__checks__", "shipped": shipped}
for line in requests:
    op, code = json.loads(line)
    try:
        if op == "ask":
            reply = {"value": plain(eval(code, space))}
        else:
            exec(code, space)
            reply = {"value": None}
    except BaseException as exc:
        reply = {"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)[:500]}
    replies.write(json.dumps(reply) + "\n")
    replies.flush()
'''


class CheckFailed(Exception):
    """A check's expectation did not hold (or the worker could not answer)."""


def decode(v: Any) -> Any:
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        (tag, items), = v.items()
        if tag == "tuple":
            return tuple(decode(x) for x in items)
        if tag == "set":
            return {decode(x) for x in items}
        return {decode(k): decode(x) for k, x in items}
    return v


def short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def same(got: Any, want: Any) -> bool:
    """Equal, and of the same types all the way down (``1 != True``, ``70 != 70.0``)."""
    if type(got) is not type(want):
        return False
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    return bool(got == want)


class Worker:
    """The process that imports the checked code: asked one request at a time."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TASK_DIR"}
        self.proc = subprocess.Popen([sys.executable, "-I", "-B", "-c", WORKER], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def request(self, op: str, code: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps([op, code]) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = self.proc.stdout.readline()
        if not line:
            raise CheckFailed(f"the worker ended (exit {self.proc.wait()}) before answering "
                              f"{code!r}: the checked code exited or crashed")
        try:
            reply: dict[str, Any] = json.loads(line)
            if "raised" not in reply:
                reply["value"] = decode(reply["value"])
            return reply
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckFailed(f"unreadable answer to {code!r}: {exc}") from None

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Checks:
    """What a checks file calls; ``count`` is how many checks held."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.count = 0
        self.rng = random.Random(os.urandom(32))

    def _value(self, op: str, code: str) -> Any:
        reply = self.worker.request(op, code)
        if "raised" in reply:
            raise CheckFailed(f"{code!r} raised {reply['raised'][0]}: {reply['message']}")
        return reply["value"]

    def do(self, code: str) -> None:
        """Run statements in the worker (its names persist between requests)."""
        self._value("do", code)

    def ask(self, expr: str) -> Any:
        """The value of ``expr`` in the worker, as plain data."""
        return self._value("ask", expr)

    def raised(self, code: str) -> tuple[str, ...]:
        """The class names (most derived first) of what running ``code`` raised; () if
        nothing."""
        reply = self.worker.request("do", code)
        return tuple(reply["raised"]) if "raised" in reply else ()

    def check(self, ok: object, message: str) -> None:
        if ok is not True:
            raise CheckFailed(message)
        self.count += 1

    def expect(self, expr: str, want: Any) -> None:
        got = self.ask(expr)
        self.check(same(got, want), f"{expr} = {short(got)}, want {short(want)}")

    def shipped_tests(self, *modules: str, ran: int | None = None,
                      names: tuple[str, ...] = ()) -> None:
        """The workspace's own unittest tests (``modules``), run in the worker: all pass, and
        ``ran`` of them ran (when given), ``names`` (test methods) among them. Necessary,
        never sufficient: the checked code runs there and could forge it."""
        got = self.ask(f"shipped({list(modules)!r})")
        self.check(got["bad"] == [], f"the shipped tests fail: {got['bad']}")
        self.check(ran is None or got["count"] == len(got["ran"]) == ran,
                   f"the shipped tests: {got['count']} ran, want {ran}")
        methods = {test_id.rsplit(".", 1)[-1] for test_id in got["ran"]}
        missing = [name for name in names if name not in methods]
        self.check(not missing, f"the shipped tests: {missing} did not run")

    def message(self, code: str) -> str:
        """What running ``code`` raised, as text ("" if nothing)."""
        reply = self.worker.request("do", code)
        return str(reply["message"]) if "raised" in reply else ""

    def names(self) -> dict[str, Any]:
        return {"__name__": "__gatecheck__", "do": self.do, "ask": self.ask,
                "raised": self.raised, "message": self.message, "check": self.check,
                "expect": self.expect, "shipped_tests": self.shipped_tests, "rng": self.rng}


def main(argv: list[str]) -> int:
    if not (sys.flags.isolated and sys.flags.no_site) or len(argv) != 2:
        print("usage: python3 -I -S gatecheck.py CHECKS_FILE|-", file=sys.stderr)
        return 2
    if argv[1] == "-":
        source = sys.stdin.read()
    else:
        with open(argv[1], encoding="utf-8") as fh:
            source = fh.read()
    worker = Worker()
    checks = Checks(worker)
    try:
        exec(compile(source, argv[1], "exec"), checks.names())
        if checks.count == 0:
            raise CheckFailed("the checks file made no check")
        verdict, code = f"{checks.count} checks passed", 0
    except CheckFailed as exc:
        verdict, code = f"FAIL: {exc}", 1
    except Exception as exc:  # an assert in the checks file, or its own mistake
        verdict, code = f"FAIL: {type(exc).__name__}: {exc}", 1
    finally:
        worker.close()
    # on stderr, after the worker's own output (which goes there too), so it is the last line
    print(f"gatecheck: {verdict}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
