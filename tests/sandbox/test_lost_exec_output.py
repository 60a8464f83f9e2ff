"""An exec whose output the engine lost is asked again.

Under load the Docker engine (20.10) now and then hands back a ``docker exec``'s output empty or
cut short although the command ran: seen as only ``id -u``'s line of ``id -u; id -g``, and as
nothing of ``printf "$HOME"`` (a run failed as infra: "cannot find the home directory"). The
container sandbox's short probes ask again (``ASKS`` times) before they call it no answer; a
probe that really fails still fails, naming the user.

The same holds for the reward files' stamp, read as the verifier exits and again a moment later
(gate/formats/_harbor.py): a second read the engine lost or cut used to differ from the first
and fail an honest run as "tampering" (seen once in CI on the mario skills task, reward 1.0).
A stamp is taken only whole; one the engine keeps losing is the engine's failure (infra), and
one whose command fails is the container's, as for every step of the gate's own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gate.errors import ContainerStepError, SandboxError
from gate.formats import ContainerSpec, ExecResult
from gate.formats._harbor import REWARD_JSON, REWARD_TXT, STAMP_END, _reward_stamp
from gate.sandbox._harbor import ASKS, DockerRunContainer

pytestmark = pytest.mark.slow  # imports the Docker sandbox (the quick loop does not)


def _box(answers: list[ExecResult]) -> tuple[DockerRunContainer, list[list[str]]]:
    """The sandbox with its execs answered from ``answers`` in turn (no engine)."""
    box = object.__new__(DockerRunContainer)
    box._ids = {}
    asked: list[list[str]] = []
    it: Iterator[ExecResult] = iter(answers)

    def run(argv: list[str], *, user: str, env: dict[str, str], timeout: float,
            step: str = "command") -> ExecResult:
        asked.append(argv)
        return next(it)

    box._run = run  # type: ignore[method-assign]
    box._check_running = lambda step: None  # type: ignore[method-assign]  # still running
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



#: a stamp's whole answer, as the image's ``sh`` prints it
WHOLE = (f"{REWARD_JSON} none\n{REWARD_TXT} 4 2026-12-06 19:20:01.123456789 +0000 77 "
         f"3255292453 4\n{STAMP_END}\n")


@pytest.mark.parametrize("lost", [ExecResult(0, "", ""), ExecResult(0, WHOLE[:40], ""),
                                  ExecResult(0, WHOLE.rsplit(STAMP_END, 1)[0], ""),
                                  ExecResult(-1, "", "")],
                         ids=["empty", "cut", "no-end", "no-exit-code"])
def test_a_reward_stamp_the_engine_lost_is_read_again_not_called_tampering(
        lost: ExecResult) -> None:
    box, asked = _box([ExecResult(0, WHOLE, ""), lost, ExecResult(0, WHOLE, "")])
    written = _reward_stamp(box)
    assert _reward_stamp(box) == written == WHOLE and len(asked) == 3


def test_a_stamp_the_engine_keeps_losing_is_infra_and_a_failing_one_the_container_s() -> None:
    box, asked = _box([ExecResult(0, "", ""), ExecResult(-1, "", ""), ExecResult(0, "", "")])
    with pytest.raises(SandboxError, match="reward-check step: the engine lost") as lost:
        _reward_stamp(box)
    assert not isinstance(lost.value, ContainerStepError) and len(asked) == ASKS
    # exit 0 every time and never the whole answer: a `sh` that runs nothing (the agent's
    # doing once it had the container), not the engine's now-and-then loss
    box, asked = _box([ExecResult(0, "", "")] * ASKS)
    with pytest.raises(ContainerStepError, match=r"reward-check.*exit 0 3 times without"):
        _reward_stamp(box)
    assert len(asked) == ASKS
    box, asked = _box([ExecResult(127, "", "sh: not found")])  # the agent broke sh, say
    with pytest.raises(ContainerStepError, match=r"reward-check.*exit 127"):
        _reward_stamp(box)
    assert len(asked) == 1


def test_a_process_listing_the_engine_lost_is_read_again_never_taken_for_an_empty_table() -> None:
    """A lost listing read as no process at all would let the agent phase's processes run on
    into the verifier (at the boundary) or make the image's own look like the agent's (at the
    start)."""
    whole = "S 42\nP 1 0 S 100 , sleep infinity\nP 57 1 S 900 , python3 /tmp/a.py\nE\n"
    box, asked = _box([ExecResult(0, "", ""), ExecResult(0, whole[:30], ""),
                       ExecResult(0, whole, "")])
    assert set(box._listing("phase-boundary").procs) == {1, 57} and len(asked) == 3


@pytest.mark.parametrize("lost", [ExecResult(0, "", ""), ExecResult(0, "4242", ""),
                                  ExecResult(-1, "", "")], ids=["empty", "cut", "no-exit-code"])
def test_a_relay_start_whose_answer_the_engine_lost_still_runs_the_agent(
        lost: ExecResult) -> None:
    """The meter relay starts in an exec of its own and announces itself; an announcement
    the engine lost used to stand as the agent's whole command (an honest run that never
    ran its agent). A relay that really failed still is the agent's result."""
    agent = ExecResult(0, "the agent ran", "")
    box, asked = _box([lost, agent])
    box.spec, box._relay, box._own = ContainerSpec(), object(), set()
    assert box._exec("agent", env={}, timeout=60, stdin=None, task_visible=False) == agent
    assert len(asked) == 2 and box._own == set()
    failed = ExecResult(127, "", "python3 not found")
    box, asked = _box([failed, agent])
    box.spec, box._relay, box._own = ContainerSpec(), object(), set()
    assert box._exec("agent", env={}, timeout=60, stdin=None, task_visible=False) == failed
    box, asked = _box([ExecResult(0, "4242 987654\n", ""), agent])
    box.spec, box._relay, box._own = ContainerSpec(), object(), set()
    assert box._exec("agent", env={}, timeout=60, stdin=None, task_visible=False) == agent
    assert box._own == {(4242, "987654")}
