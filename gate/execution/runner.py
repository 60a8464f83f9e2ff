"""The runner: one (task, replication) in a fresh sandbox, verified, recorded honestly.

The contract (the runner contract in docs/tasks.md) is identical for every agent kind and sandbox:
fresh workspace, ``starting/`` copied, ``setup.sh`` (cwd = workspace), the agent, then
``.runner/final.txt`` and ``verify.sh`` under a timeout. Setup, sandbox and model-API
failures the provider or the machine caused are infra errors, never task failures; what the
agent caused (a model with no price, a request refused, malformed or left in flight, a stream
it cut before it began) fails its run with that reason, and so does a step of the gate's own
that the run's container failed once the agent phase began (``_fault``). The runner keeps no
global state and never changes its own cwd, so runs can go in parallel.
"""

from __future__ import annotations

import contextlib
import errno
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gate._files import json_problem
from gate.agents import Agent, AgentOutcome, RunContext
from gate.core.results import RunResult, RunUsage, now_iso, now_iso_ms
from gate.core.tasks import DEFAULT_TASK_TIMEOUT, DEFAULT_VERIFY_TIMEOUT, Task
from gate.meter import RunTotals
from gate.sandbox import (
    ContainerStepError,
    Sandbox,
    SandboxError,
    SandboxProvider,
    clip,
    make_provider,
)
from gate.secrets import Redactor, mask_credentials
from gate.upstream import ANTHROPIC, Upstream
from gate.usage import Usage

if TYPE_CHECKING:
    from gate.core.skills import Skill

NOTES_LIMIT = 4000
SCORE_LIMIT = 100_000  # bytes of .runner/score.json
TRANSCRIPT_OUTPUT_LIMIT = 8000  # characters of a script's or command's output in a transcript


class MeterRun(Protocol):
    """One run's slice of the metering point: its own URL and token, and what it counted."""

    base_url: str
    token: str
    api: Upstream  # the upstream behind the meter: what the agent's environment holds

    def measured(self) -> RunTotals:
        """Model requests, usage and cost so far: measured (warm start) and as billed."""
        ...

    def api_failure(self) -> str | None:
        """Why the model API failed, when the run's newest model request failed by the
        provider's or the machine's doing (infra)."""
        ...

    def agent_error(self) -> str | None:
        """Why the run's newest model request failed, when the agent caused it."""
        ...

    def refusals(self) -> list[dict[str, str]]:
        """Requests the meter refused to forward (endpoints outside its allow-list)."""
        ...

    def close(self) -> None: ...

    @property
    def capped(self) -> str | None:
        """Why the meter stopped answering the run's model requests (a cap), if it did."""
        ...


class Meter(Protocol):
    def open_run(self, run_name: str, *, max_turns: int | None = None,
                 max_cost_usd: float | None = None) -> MeterRun: ...


@dataclass
class RunOptions:
    verify_timeout: float = DEFAULT_VERIFY_TIMEOUT
    task_timeout: float = DEFAULT_TASK_TIMEOUT
    max_turns: int | None = None
    max_run_cost: float | None = None  # USD; the meter answers a run's requests past it
    condition: str | None = None
    arm: str | None = None  # a same-job A/B's arm ("base" or "pr"): in the run's name too
    commit: str | None = None
    transcripts_dir: Path | None = None
    redactor: Redactor = field(default_factory=Redactor.from_environ)
    # the skills a run's workspace gets (its condition's): the same for every task, or per
    # task (gate.core.skills.skills_for: a standard condition's skills depend on the task)
    skills: Sequence[Skill] | Callable[[Task], Sequence[Skill]] = ()

    def skills_of(self, task: Task) -> list[Skill]:
        return list(self.skills(task) if callable(self.skills) else self.skills)


def _tail(text: str, limit: int = 200) -> str:
    """The last line of an output, for a reason: credentials masked before it is cut."""
    lines = [ln for ln in mask_credentials(text).strip().splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else "(no output)"


class _Transcript:
    """A JSONL transcript written as events happen; every line redacted first."""

    def __init__(self, path: Path | None, redactor: Redactor) -> None:
        self.path = path
        self._redact = redactor
        self._lock = threading.Lock()
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.path:
            return
        line = self._redact(json.dumps({"t": round(time.time(), 3), **event}, default=str))
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def _read_runner_files(sandbox: Sandbox) -> tuple[str | None, dict[str, Any] | None]:
    notes: str | None = None
    score: dict[str, Any] | None = None
    with contextlib.suppress(OSError, SandboxError):
        notes = clip(sandbox.read_file(".runner/notes.txt", max_bytes=NOTES_LIMIT * 4,
                                       truncate=True).strip(), NOTES_LIMIT) or None
    try:
        raw = json.loads(sandbox.read_file(".runner/score.json", max_bytes=SCORE_LIMIT))
        score = raw if isinstance(raw, dict) else {"value": raw}
    except (OSError, SandboxError, ValueError, RecursionError):
        pass
    return notes, score


def _unfit_score(score: dict[str, Any] | None) -> str | None:
    """Why the verifier's score cannot go into a results file, or None: it is held to what
    every reader of results holds a file to (``json_problem``: no integer past ±2^53, no
    non-finite number, no nesting past the limit), so one verifier's number cannot make
    ``gate compare``, ``gate report`` or ``gate baseline`` refuse the file. The run fails
    with that reason (an error would let whoever writes the score hide a failure)."""
    problem = json_problem(score) if score is not None else None
    if problem is None:
        return None
    return f"the verifier's score cannot be recorded: score.{problem}"


def _write_final(sandbox: Sandbox, message: str) -> str | None:
    """Write ``.runner/final.txt``; when the agent left something there that cannot be written
    (a directory, a FIFO, a symlink out), the run fails as the agent's doing, not as infra."""
    try:
        sandbox.write_file(".runner/final.txt", message)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO):
            raise
        return f"the agent left .runner/final.txt unwritable: {exc.strerror or exc}"
    return None


@dataclass
class _Run:
    """One run as it goes: what it is, where it records, and its outcome so far (an infra
    error until verify decides otherwise)."""

    task: Task
    replication: int
    opts: RunOptions
    name: str
    record: _Transcript
    transcript: Path | None
    max_turns: int | None
    meter_run: MeterRun | None
    start: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=now_iso_ms)
    status: str = "error"
    reason: str | None = "not started"
    notes: str | None = None
    score: dict[str, Any] | None = None
    withheld: list[str] = field(default_factory=list)  # credentials kept from its commands
    skill_notes: list[str] = field(default_factory=list)  # about skills (the sandbox's)
    install_s: float | None = None  # waited for the agent's install: not the run's duration
    acted: bool = False  # the agent phase began: what breaks in its sandbox may be its doing


def _prepare(task: Task, replication: int, opts: RunOptions, meter: Meter | None) -> _Run:
    """Name the run, open its transcript and its slice of the meter."""
    # the arm and the condition are in the name: the meter, the transcripts and the
    # simulator's draws keep the two arms of a same-job A/B, and the conditions, apart
    name = "-".join([task.id, *(x for x in (opts.arm, opts.condition) if x), f"r{replication}"])
    transcript = opts.transcripts_dir / f"{name}.jsonl" if opts.transcripts_dir else None
    record = _Transcript(transcript, opts.redactor)
    max_turns = min((t for t in (task.meta.max_turns, opts.max_turns) if t), default=None)
    meter_run = (meter.open_run(name, max_turns=max_turns, max_cost_usd=opts.max_run_cost)
                 if meter else None)
    return _Run(task, replication, opts, name, record, transcript, max_turns, meter_run)


def _set_up(run: _Run, sandbox: Sandbox) -> list[Skill]:
    """The run's skills installed, then ``setup.sh``; a setup that fails is infra."""
    from gate.core.skills import run_skills

    task, record = run.task, run.record
    skills = run_skills(task, run.opts.skills_of(task), run.opts.condition)
    # before setup and the agent; only what this run's condition has (a container's image
    # may hold skills the gate did not put there: always asked)
    skills = sandbox.install_skills(skills, only=run.opts.condition is not None)
    if skills or task.skills_root is not None:
        record({"type": "skills", "installed": {s.name: s.digest for s in skills}})
    if task.setup_script:
        res = sandbox.run_script("setup.sh", timeout=task.task_timeout(run.opts.task_timeout))
        record({"type": "setup", "returncode": res.returncode,
                "output": clip(res.output, TRANSCRIPT_OUTPUT_LIMIT)})
        if res.returncode != 0 or res.timed_out:
            why = "timeout" if res.timed_out else f"exit {res.returncode}"
            raise SandboxError(f"setup.sh failed ({why}): {_tail(res.output)}")
    return skills


def _act(run: _Run, sandbox: Sandbox, agent: Agent, skills: list[Skill],
         step: Task) -> AgentOutcome:
    """The agent on the workspace (``step``: the task, or one step of a multi-step task); its
    crash, a cap or a failing model API is told apart."""
    meter_run = run.meter_run
    ctx = RunContext(
        task=step, replication=run.replication, run_name=run.name,
        timeout=step.task_timeout(run.opts.task_timeout), max_turns=run.max_turns,
        base_url=meter_run.base_url if meter_run else None,
        api_key=meter_run.token if meter_run else None,
        upstream=meter_run.api if meter_run else ANTHROPIC,
        record=run.record, skills=tuple(skills),
    )
    run.acted = True
    try:
        outcome = agent.run(sandbox, ctx)
    except SandboxError:
        raise
    except Exception as exc:  # an agent crash is the harness's problem, not the task's
        outcome = AgentOutcome(infra_error=f"agent crashed: {type(exc).__name__}: {exc}")
    if outcome.infra_error and meter_run is not None and meter_run.capped:
        # the agent stopped on the meter's refusal past a cap (the builtin agent reports
        # any API error it cannot retry as infra): the run was stopped, it did not break
        outcome.infra_error = None
        outcome.failure = f"stopped by the meter: {meter_run.capped}"
    fault = meter_run.agent_error() if meter_run is not None else None
    if fault and outcome.infra_error:
        # the API error the agent gave up on was of its own making (a malformed request, one
        # the meter refused, a stream it cut): its failure, never infra
        outcome.infra_error, outcome.failure = None, f"{fault} ({outcome.infra_error})"
    elif fault and outcome.failure:
        outcome.failure = f"{outcome.failure}; {fault}"
    elif outcome.infra_error is None and outcome.failure and meter_run is not None:
        # an agent that gave up because the model API kept failing (the provider's or the
        # machine's doing) is infra, not a fail
        outcome.infra_error = meter_run.api_failure()
    run.record({"type": "final", "message": clip(outcome.final_message,
                                                 TRANSCRIPT_OUTPUT_LIMIT),
                "failure": outcome.failure, "infra_error": outcome.infra_error})
    return outcome


def _verify(run: _Run, sandbox: Sandbox, outcome: AgentOutcome, step: Task,
            index: int | None) -> bool:
    """``.runner/final.txt``, then the verifier: it decides, even when the agent did not
    finish cleanly. ``index``: the step of a multi-step task. True when the next step runs."""
    if outcome.infra_error:
        run.status, run.reason = "error", outcome.infra_error
        return False
    if (broke := _write_final(sandbox, outcome.final_message)) is not None:
        run.status, run.reason = "failed", broke
        return False
    verdict = sandbox.verify(timeout=step.verify_timeout(run.opts.verify_timeout), step=index)
    res = verdict.result
    run.record({"type": "verify", "returncode": res.returncode, "timed_out": res.timed_out,
                "output": clip(res.output, TRANSCRIPT_OUTPUT_LIMIT),
                **({"step": run.task.steps[index].name} if index is not None else {}),
                **({"score": verdict.score} if verdict.score is not None else {}),
                **({"files": verdict.files} if verdict.files else {})})
    run.notes, score = _read_runner_files(sandbox)
    run.score = verdict.score if verdict.score is not None else score
    if (unfit := _unfit_score(run.score)) is not None:
        run.status, run.reason, run.score = "failed", unfit, None
        return False
    if res.timed_out and verdict.final:
        run.status, run.reason = "failed", "timeout"
    elif verdict.passed:
        run.status, run.reason = "passed", None
    else:
        run.status = "failed"
        failure = None if verdict.tampered else outcome.failure  # tampering says more
        run.reason = failure or verdict.reason or (
            f"verify exited {res.returncode}: {_tail(res.output)}")
    return not verdict.final


def _close_meter(run: _Run) -> tuple[RunTotals, str | None]:
    """What the meter counted for the run, and the cap it stopped the run at (if any)."""
    meter_run = run.meter_run
    if meter_run is None:
        return RunTotals(0, Usage(), 0.0, Usage(), 0.0), None
    meter_run.close()  # waits briefly for requests still in flight to be counted
    totals = meter_run.measured()
    if refused := meter_run.refusals():
        run.record({"type": "meter_refused", "requests": refused})
    if capped := meter_run.capped:
        run.record({"type": "meter_capped", "reason": capped})
        if run.status == "failed":  # the agent stopped because the meter stopped it
            run.reason = f"stopped by the meter: {capped}"
    if totals.unmetered:  # billed but not all counted: never a pass at a lower cost
        _unmetered(run, totals.unmetered, totals.unmetered_by)
    return totals, capped


def _notes(run: _Run) -> str | None:
    """The run's notes (``.runner/notes.txt``), then the credentials its commands did not get
    (named, never their values: a task that needed one fails with a visible reason)."""
    lines = [run.notes] if run.notes else []
    if run.withheld:
        lines.append(f"gate: kept from this run's environment: {', '.join(run.withheld)} (list "
                     "a name in [suite] pass_env of the base branch's gate.toml to pass it)")
    lines += run.skill_notes  # a skill not honoured, a SKILL.md outside the skill folders
    return "\n".join(lines) or None


def _unmetered(run: _Run, why: str, by: str | None) -> None:
    """A run whose totals may miss what was billed: failed with that reason when the agent
    caused it (it must not leave the pass rate as infra), an infra error otherwise."""
    run.record({"type": "meter_unmetered", "reason": why, "by": by})
    if by != "agent":
        run.status, run.reason = "error", f"infra: {why}"
        return
    kept = run.reason if run.status == "failed" and run.reason else None
    run.status, run.reason = "failed", f"{why}; {kept}" if kept else why


def _record(run: _Run, totals: RunTotals, capped: str | None) -> RunResult:
    """The run's result, every text redacted."""
    redact = run.opts.redactor
    return RunResult(
        task=run.task.id,
        replication=run.replication,
        status=run.status,  # type: ignore[arg-type]
        reason=redact(run.reason) if run.reason else None,
        turns=totals.turns,
        usage=RunUsage(**totals.usage.model_dump()),
        cost_usd=round(totals.cost_usd, 8),
        billed_usage=RunUsage(**totals.billed_usage.model_dump()),
        overhead_usd=round(totals.overhead_usd, 8),
        duration_s=round(max(0.0, time.monotonic() - run.start - (run.install_s or 0)), 3),
        install_s=round(run.install_s, 3) if run.install_s is not None else None,
        notes=redact(notes) if (notes := _notes(run)) else None,
        task_digest=run.task.digest,
        score=run.score,
        condition=run.opts.condition,
        arm=run.opts.arm,
        commit=run.opts.commit,
        created_at=now_iso(),
        started_at=run.started_at,
        transcript=str(run.transcript) if run.transcript else None,
        capped=capped,
        estimated=(f"output tokens of {totals.estimated} model stream(s) cut short are "
                   "estimated from what passed (about 4 characters a token)"
                   if totals.estimated else None),
    )


def run_one(
    task: Task,
    replication: int,
    agent: Agent,
    *,
    provider: SandboxProvider | None = None,
    meter: Meter | None = None,
    options: RunOptions | None = None,
) -> RunResult:
    """Run one (task, replication): prepare → act → verify → record. Always returns a
    result; always tears down."""
    provider = provider or make_provider("local")
    run = _prepare(task, replication, options or RunOptions(), meter)
    sandbox: Sandbox | None = None
    try:
        sandbox = provider.create(task, run.name, install=getattr(agent, "install", None))
        run.install_s = sandbox.install_s
        skills = _set_up(run, sandbox)
        for index in range(len(task.steps) or 1):  # a multi-step task: its steps in turn
            step = task.for_step(index) if task.steps else task
            if not _verify(run, sandbox, _act(run, sandbox, agent, skills, step), step,
                           index if task.steps else None):
                break
    except (SandboxError, OSError) as exc:
        _fault(run, exc)
    finally:
        if sandbox is not None:
            _past_disk(run, sandbox)
            run.withheld = sandbox.withheld_env()
            run.skill_notes = list(sandbox.skill_notes)
            sandbox.close()
        totals, capped = _close_meter(run)
    return _record(run, totals, capped)


def _fault(run: _Run, exc: SandboxError | OSError) -> None:
    """Whose failure a sandbox's error is, decided here only. A step of the gate's own that
    failed in the run's container by the container's doing (``ContainerStepError``: its
    command could not run or failed, the container stopped) counts against the run once the
    agent phase began: the agent had the container to break (``/bin/sh`` renamed, pid 1
    killed), and an infra error would drop the run from the comparison. Anything else (the
    engine, the host, a cancel), and anything before the agent phase (the image, the
    container's start, setup), is infra; a run past its disk limit is failed after this
    (:func:`_past_disk`)."""
    if run.acted and isinstance(exc, ContainerStepError):
        run.status = "failed"
        run.reason = f"the gate's {exc.step} step failed after the agent phase: {exc.detail}"
    else:
        run.status, run.reason = "error", f"infra: {exc}"


def _past_disk(run: _Run, sandbox: Sandbox) -> None:
    """A run that wrote past ``[suite] disk_mb`` fails with that reason, whatever else it
    came to: its sandbox's watch stopped it (an infra error of its own making, "cancelled"),
    or measured it past the limit as it ended. What it wrote is the agent's doing."""
    if (over := sandbox.disk_over()) is not None:
        run.record({"type": "disk", "reason": over})
        run.status, run.reason = "failed", over


def condition_plan(tasks: Iterable[Task], replications: int,
                   arms: Callable[[Task], Sequence[Arm]],
                   first: int = 0) -> list[tuple[Task, int, Arm]]:
    """Every (task, replication, condition) of a run with skill conditions: replication-major
    like a plain run's (``gate.execution.run.planned_items``), the conditions of each (task,
    replication) next to each other, so they share the schedule (the same minutes of the
    model API, the same load on the machine).
    ``arms(task)``: the conditions that apply to the task, one :class:`Arm` each.

    Their order rotates by one step per task and per replication (a Latin square over a
    suite), so no condition always runs first, or always after another one: which condition
    goes first is balanced by design, not by chance, and the plan is the same on ``--resume``.
    """
    out: list[tuple[Task, int, Arm]] = []
    tasks = list(tasks)
    for rep in range(first, first + replications):
        for i, task in enumerate(tasks):
            mine = list(arms(task))
            if not mine:
                continue
            k = (rep + i) % len(mine)
            out += [(task, rep, arm) for arm in mine[k:] + mine[:k]]
    return out


@dataclass(frozen=True)
class Arm:
    """One arm of a same-job A/B: its agent and its run options (commit, turn cap,
    transcripts), run through the same pool, sandboxes and meter as the other arm."""

    name: str
    agent: Agent
    options: RunOptions


def run_many(
    work: Sequence[tuple[Task, int]] | Sequence[tuple[Task, int, Arm]],
    agent: Agent | None,
    *,
    jobs: int = 1,
    provider: SandboxProvider | None = None,
    meter: Meter | None = None,
    options: RunOptions | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    cancel: threading.Event | None = None,
    admit: Callable[[Task, int, str | None], bool] | None = None,
) -> list[RunResult]:
    """Run ``work`` with up to ``jobs`` at once; ``on_result`` sees each result as it lands.

    ``admit(task, replication, condition)``, asked as each run is about to start, may skip it
    (a budget).
    An item ``(task, replication, arm)`` runs the arm's agent with the arm's options instead
    of ``agent`` and ``options`` (a same-job A/B interleaves the two arms in one plan).

    On Ctrl-C (or any escape) queued runs are dropped and ``cancel`` is set, which makes the
    sandboxes built with it kill what they are running, so the gate stops in about a second.
    """
    results: list[RunResult] = []
    lock = threading.Lock()

    def one(item: tuple[Task, int] | tuple[Task, int, Arm]) -> RunResult | None:
        task, replication = item[0], item[1]
        opts = item[2].options if len(item) == 3 else options
        if admit is not None and not admit(task, replication, opts.condition if opts else None):
            return None
        if len(item) == 3:
            arm = item[2]
            return run_one(task, replication, arm.agent, provider=provider, meter=meter,
                           options=arm.options)
        assert agent is not None, "run_many: an item without an arm needs the agent"
        return run_one(task, replication, agent, provider=provider, meter=meter,
                       options=options)

    def land(res: RunResult | None) -> None:
        if res is None:
            return
        with lock:
            results.append(res)
            if on_result:
                on_result(res)

    if jobs <= 1:
        try:
            for item in work:
                land(one(item))
        except BaseException:
            if cancel is not None:
                cancel.set()
            raise
    else:
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            for fut in as_completed([pool.submit(one, item) for item in work]):
                land(fut.result())
        except BaseException:
            # Ctrl-C or a crash: start nothing new, stop what runs; what landed is written
            if cancel is not None:
                cancel.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    results.sort(key=lambda r: r.key.order)
    return results
