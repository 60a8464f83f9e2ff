"""The quick loop's promise (README): a test that is not marked ``slow`` never starts ``gate`` as
a subprocess. conftest's autouse guard enforces it; these tests check the guard."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.process import starts_gate


def test_a_quick_test_that_starts_gate_is_refused() -> None:
    with pytest.raises(AssertionError, match=r"mark it @pytest\.mark\.slow"):
        subprocess.run([sys.executable, "-m", "gate", "--help"], capture_output=True, check=False)
    with pytest.raises(AssertionError, match=r"mark it @pytest\.mark\.slow"):
        subprocess.Popen(f"{sys.executable} -P -m gate run --sim", shell=True)


def test_other_subprocesses_still_run() -> None:
    p = subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True,
                       check=True)
    assert p.stdout == "ok\n"


@pytest.mark.parametrize(("argv", "gate"), [
    (["python3", "-m", "gate", "ci"], True),
    ([b"/usr/bin/python3", b"-P", b"-m", b"gate"], True),
    ("python -m gate --help", True),
    (["python3", "-m", "gateway"], False),
    (["gate", "run"], True),
    ("/usr/local/bin/gate --help", True),
    (["python3", "-c", "import gate"], False),  # importing it is fine
    (["git", "-C", "gate", "status"], False),
])
def test_what_counts_as_starting_the_gate(argv: object, gate: bool) -> None:
    assert starts_gate(argv) is gate


@pytest.mark.slow
def test_a_slow_test_may_start_gate() -> None:
    p = subprocess.run([sys.executable, "-m", "gate", "--help"], capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0 and "Usage" in p.stdout, p.stderr
