"""An exec whose output the engine lost is asked again.

Under load the Docker engine (20.10) now and then hands back a ``docker exec``'s output empty or
cut short although the command ran: seen as only ``id -u``'s line of ``id -u; id -g``, and as
nothing of ``printf "$HOME"`` (a run failed as infra: "cannot find the home directory"). The
container sandbox's short probes ask again (``ASKS`` times) before they call it no answer; a
probe that really fails still fails, naming the user.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gate.errors import SandboxError
from gate.formats import ExecResult
from gate.sandbox._harbor import ASKS, DockerRunContainer

pytestmark = pytest.mark.slow  # imports the Docker sandbox (the quick loop does not)


def _box(answers: list[ExecResult]) -> tuple[DockerRunContainer, list[list[str]]]:
    """The sandbox with its execs answered from ``answers`` in turn (no engine)."""
    box = object.__new__(DockerRunContainer)
    box._ids = {}
    asked: list[list[str]] = []
    it: Iterator[ExecResult] = iter(answers)

    def run(argv: list[str], *, user: str, env: dict[str, str], timeout: float) -> ExecResult:
        asked.append(argv)
        return next(it)

    box._run = run  # type: ignore[method-assign]
    return box, asked


def test_a_lost_or_cut_answer_is_asked_again() -> None:
    box, asked = _box([ExecResult(0, "", ""), ExecResult(0, "/home/agent", "")])
    assert box._home("agent") == "/home/agent" and len(asked) == 2
    box, asked = _box([ExecResult(0, "1000\n", ""), ExecResult(0, "1000\n1000\n", "")])
    assert box._uid_gid("agent") == (1000, 1000) and len(asked) == 2
    assert box._uid_gid("agent") == (1000, 1000) and len(asked) == 2  # asked once per user


def test_a_probe_that_keeps_failing_is_an_error_naming_the_user() -> None:
    box, asked = _box([ExecResult(126, "", "unable to find user nobody2")] * ASKS)
    with pytest.raises(SandboxError, match="nobody2"):
        box._uid_gid("nobody2")
    assert len(asked) == ASKS
    box, _ = _box([ExecResult(0, "", "")] * ASKS)
    with pytest.raises(SandboxError, match="home directory of the user 'agent'"):
        box._home("agent")

