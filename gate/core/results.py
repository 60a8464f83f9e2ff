"""The results file (schema v1). ``baseline.json`` uses the same schema.

Required fields are exactly the documented schema v1; everything else is optional so that a file
holding only the required fields loads, and newer writers can add fields older readers keep.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from gate import __version__
from gate._files import (
    RESULTS_LIMIT,
    RESULTS_MAX_VALUES,
    atomic_write_json,
    describe_validation_error,
    parse_json,
    printable,
    read_bytes,
)
from gate.core.tasks import TASK_ID_PATTERN
from gate.errors import BadInput
from gate.usage import Usage

Status = Literal["passed", "failed", "error"]

TaskId = Annotated[str, StringConstraints(pattern=TASK_ID_PATTERN)]

# Bounds of the numbers a results file may hold: far beyond any real run, near enough that the
# sums and means over a whole file stay exact and finite. A file past one is exit 2 naming the
# field (integers past 2^53 anywhere in the file are refused when it is parsed, gate/_files.py).
MAX_COUNT = 10**9  # replications, turns, jobs, numbers of runs
MAX_TOKENS = 10**12  # tokens of one kind in one run
MAX_RUN_USD = 10**6  # what one run cost
MAX_FILE_USD = 10**9  # what a file's runs cost together
MAX_SECONDS = 10**7  # one run's duration (about four months)
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
Rate = Annotated[float, Field(ge=0, le=1)]


class RunKey(NamedTuple):
    """A run's identity: no two runs of one results file share it.

    Everything that dedupes, pairs or pools runs goes through this key, so a capability that
    adds a dimension (the skill condition, the A/B arm) adds a field here, before
    ``replication``, and reaches all of them. ``replication`` is always last: it numbers the
    runs within their pool.
    """

    task: str
    condition: str | None  # the skill condition (``gate run --condition``); None: none named
    replication: int

    @property
    def pool(self) -> tuple[object, ...]:
        """What runs pooled together share: the key without its replication number."""
        return tuple(self[:-1])

    @property
    def order(self) -> tuple[str, bool, str, int]:
        """How a file lists its runs: by task, a task's plain runs before its conditions'
        (a file can hold both: ``gate ci`` runs them in one session), by replication."""
        return (self.task, self.condition is not None, self.condition or "", self.replication)

    def __str__(self) -> str:
        where = f" [{printable(self.condition)}]" if self.condition is not None else ""
        return f"{printable(self.task)}{where} #{self.replication}"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class RunUsage(Usage):
    """Per-run usage: the four API fields are required in the file, the TTL split is not."""

    input_tokens: Tokens
    output_tokens: Tokens
    cache_creation_input_tokens: Tokens
    cache_read_input_tokens: Tokens
    cache_creation_5m: Tokens = 0
    cache_creation_1h: Tokens = 0


class RunResult(_Open):
    """One (task, replication). A failed or errored run is still a result."""

    task: TaskId
    replication: Count
    status: Status
    reason: str | None
    turns: Count
    usage: RunUsage
    cost_usd: float = Field(ge=0, le=MAX_RUN_USD)
    # wall time of the run (the duration metric, gate/core/metrics.py); None: a file that did not
    # record it (the metric is then not available in a comparison with it)
    duration_s: float | None = Field(default=None, ge=0, le=MAX_SECONDS)
    notes: str | None
    # seconds the run waited for its agent's install into the task's image ([agent] install:
    # the install itself, or another run's holding it): outside ``duration_s``, never a metric
    install_s: float | None = Field(default=None, ge=0, le=MAX_SECONDS)
    # optional extras
    task_digest: str | None = None
    score: dict[str, object] | None = None
    condition: str | None = None
    # the arm of a same-job A/B that ran it ("base" or "pr"; gate/execution/ab.py): each arm has its
    # own results file, so the key needs no arm
    arm: str | None = None
    commit: str | None = None
    created_at: str | None = None
    # when the run started (ISO 8601, milliseconds): the order runs began in, e.g. the
    # interleaving of a same-job A/B's arms
    started_at: str | None = None
    # in a pooled baseline: the ``created_at`` of the results file (the refresh) it came from
    refresh: str | None = None
    transcript: str | None = None
    # Metering ``warm-prefix-v1`` (``Results.schedule.metering``): ``usage`` and ``cost_usd``
    # are *measured* (each run starts with its shared prefix warm); ``billed_usage`` is what
    # the API billed and ``overhead_usd`` the cache-write premium the warm start left out
    # (suite overhead: ``cost_usd + overhead_usd`` is what the run really cost). Absent in
    # older files, whose ``usage`` and ``cost_usd`` are as billed.
    billed_usage: RunUsage | None = None
    # billed minus measured: negative only where a price makes a cache read dearer than a write
    overhead_usd: float | None = Field(default=None, ge=-MAX_RUN_USD, le=MAX_RUN_USD)
    # the meter stopped answering the run's model requests at its turn or cost cap: why
    capped: str | None = None
    # part of ``usage`` is an estimate (streams cut short: output counted from what passed)
    estimated: str | None = None

    @property
    def key(self) -> RunKey:
        return RunKey(self.task, self.condition, self.replication)

    @property
    def valid(self) -> bool:
        """Whether the run measured the agent: every run but an infra error (``error``: the
        sandbox, the meter or the model's API failed, not the agent). Pass rates, turns and
        every test count valid runs only; cost and tokens count every run (billed)."""
        return self.status != "error"


class AgentInfo(_Open):
    kind: str
    fingerprint: str
    parts: dict[str, str] = Field(default_factory=dict)
    # what some parts hash, readably ({"sampling": {"max_turns": 30, ...}}): absent in files
    # written before it was recorded, where a change is shown as the parts' digests
    values: dict[str, dict[str, Any]] = Field(default_factory=dict)


class TaskInfo(_Open):
    digest: str
    difficulty: str | None = None
    # its container kept the NET_RAW capability the gate drops ([suite].net_raw), else None
    net_raw: bool | None = None


class SuiteInfo(_Open):
    digest: str
    tasks: dict[TaskId, TaskInfo]


class Schedule(_Open):
    """How the runs of a results file were scheduled and measured.

    Schedule fields (replications, jobs, sequential looks, order) may differ freely between
    the two arms of a comparison; ``metering`` may not (docs/statistics.md). Shards, skill
    conditions and A/B arms are recorded when the runs have them.
    """

    replications: Count | None = None  # runs per task in the file
    jobs: Count | None = None  # runs at once
    sequential: list[Count] | None = None  # replications run per look, when sequential
    metering: str | None = None  # how usage and cost are measured, e.g. "warm-prefix-v1"
    shard: str | None = None
    conditions: list[str] | None = None
    arm: str | None = None


class PlanTask(_Open):
    """One task's planned runs per look (gate/compare/_plan.py): ``allowed`` is the range of
    its baseline pass counts under which the plan comes out the same (None: the plan read no
    outcome of the task)."""

    looks: list[Count]
    basis: str = Field(default="", max_length=200)
    allowed: list[Count] | None = Field(default=None, min_length=2, max_length=2)


class PlanConditions(_Open):
    """The skill conditions a planned run ran beside its plain runs (``gate ci`` on a PR that
    touches a skill): each of ``names`` on each of ``tasks`` it applies to, replications
    0 .. ``runs`` − 1, all in the first look (gate/compare/_plan_conditions.py)."""

    names: list[str] = Field(max_length=100)
    tasks: list[TaskId]
    runs: Count
    basis: str = Field(default="", max_length=200)


class PlanRecord(_Open):
    """How the file's runs were planned per task and look, by which rule, from what
    (``gate.compare.plan_runs`` recomputes it); ``looks_run``: the looks the file holds;
    ``conditions``: the skill conditions' runs beside them (None: none ran)."""

    rule: str = Field(max_length=40)
    version: Count
    source: Literal["baseline", "independent", "none"]
    settings: dict[str, Any]
    tasks: dict[TaskId, PlanTask]
    looks_run: Count
    conditions: PlanConditions | None = None

    def problem(self, suite: SuiteInfo) -> str | None:
        """``plan.<field>: problem`` for the first thing in the record no plan can hold: every
        task of it in the file's suite, at least one run in the first look, as many looks for
        every task, ``allowed`` an ascending pair, and no more looks run than planned. Whether
        the rule gives this plan is :func:`gate.compare.judge`'s check, against the baseline."""
        lengths = {len(t.looks) for t in self.tasks.values()}
        for tid, task in self.tasks.items():
            if tid not in suite.tasks:
                return f"plan.tasks.{tid}: {tid!r} is not a task of suite.tasks"
            if not task.looks or task.looks[0] < 1:
                # a later look may run none of a task (a never-passed task's 1 + 0 + 1)
                return f"plan.tasks.{tid}.looks: the first look plans at least 1 run"
            if len(lengths) > 1:
                return (f"plan.tasks.{tid}.looks: {len(task.looks)} looks, where other tasks "
                        "have a different number: every task has the same looks")
            if task.allowed is not None and task.allowed[0] > task.allowed[1]:
                return (f"plan.tasks.{tid}.allowed: {task.allowed} is not a range "
                        "(its low end above its high)")
        if self.looks_run > max(lengths, default=0):
            return (f"plan.looks_run: {self.looks_run} looks run, more than the "
                    f"{max(lengths, default=0)} the plan has")
        if self.conditions is not None:
            for i, tid in enumerate(self.conditions.tasks):
                if tid not in suite.tasks:
                    return f"plan.conditions.tasks.{i}: {tid!r} is not a task of suite.tasks"
            if self.conditions.runs < 1:
                return "plan.conditions.runs: a condition runs at least 1 run on a task"
        return None


class UpstreamInfo(_Open):
    """The model API that answered a file's runs, as the upstream port recorded it
    (gate/upstream): never a key. ``pricing`` names the price rules applied (two files priced
    by different rules compare their cost without gating on it)."""

    upstream: str = Field(max_length=64)  # as [agent] upstream names it
    provider: str = Field(max_length=64)
    region: str | None = Field(default=None, max_length=64)  # None: none, or global
    model_id: str | None = Field(default=None, max_length=256)  # the model id as called
    host: str | None = Field(default=None, max_length=255)  # the base URL's host only
    pricing: str = Field(max_length=64)

    @property
    def place(self) -> tuple[str, str, str | None, str | None]:
        """Where the runs were answered: two files whose places differ were measured on
        different upstreams (a baseline never pools them; a verdict names both)."""
        return (self.upstream, self.provider, self.region, self.host)

    def describe(self) -> str:
        region = f", region {self.region}" if self.region else ""
        host = f" at {self.host}" if self.host else ""
        called = f", model {self.model_id}" if self.model_id else ""
        return f"upstream {self.upstream} ({self.provider}{region}{host}{called})"


#: the results field that holds :class:`UpstreamInfo`
UPSTREAM_RECORD = "upstream_api"


class Summary(_Open):
    passed: Count
    failed: Count
    errors: Count
    total: Count
    pass_rate: Rate | None
    mean_turns: float | None = Field(ge=0, le=MAX_COUNT)
    cost_usd: float = Field(ge=0, le=MAX_FILE_USD)
    cache_hit_rate: Rate | None
    # the warm starts' cache-write premium (suite overhead, never in ``cost_usd``) and the
    # runs' total spend, ``cost_usd + overhead_usd``; absent in older files
    overhead_usd: float | None = Field(default=None, ge=-MAX_FILE_USD, le=MAX_FILE_USD)
    spend_usd: float | None = Field(default=None, ge=-MAX_FILE_USD, le=MAX_FILE_USD)


class MissingRun(BaseModel):
    task: TaskId
    replication: Count
    condition: str | None = None


class Interruption(_Open):
    """Why a run stopped before its plan was done, and which planned runs have no result."""

    reason: str
    missing: list[MissingRun]


class Results(_Open):
    schema_version: Literal[1]
    gate_version: str
    created_at: str
    commit: str | None
    model: str
    agent: AgentInfo
    suite: SuiteInfo
    runs: list[RunResult]
    summary: Summary
    # set when the run was stopped (Ctrl-C, SIGTERM, a crash) before every planned run landed:
    # such a file can be read and compared, never promoted into the baseline
    interrupted: Interruption | None = None
    schedule: Schedule | None = None  # absent in files written before it was recorded
    # the upstream that answered the runs; absent in files written before it was recorded
    # (they compare as ever)
    upstream_api: UpstreamInfo | None = None
    # the per-task plan of the runs (issue 40; absent: every task the same runs, as before)
    plan: PlanRecord | None = None

    @property
    def metering(self) -> str | None:
        """The metering definition of the runs (None: an older file, usage as billed)."""
        return self.schedule.metering if self.schedule is not None else None

    def run_problem(self) -> str | None:
        """``runs.<i>.<field>: problem`` for the first run that breaks the file's integrity:
        a duplicate (two runs with one key), or a run of a task the file's suite lacks."""
        seen: dict[RunKey, int] = {}
        for i, run in enumerate(self.runs):
            if run.task not in self.suite.tasks:
                return f"runs.{i}.task: {run.task!r} is not a task of suite.tasks"
            first = seen.setdefault(run.key, i)
            if first != i:
                return f"runs.{i}: duplicate run {run.key} (the same as runs.{first})"
        return None

    def broken_tasks(self) -> dict[str, str]:
        """The suite's tasks this run did not run, and why (``problems``: a task that could
        not load, which ``gate run --skip-broken`` and a PR's run record, or one the sandbox
        could not run): a comparison lists them as broken, never as removed. Their names and
        reasons are escaped by the loader; a file that holds anything else there is refused
        when it is read (:func:`parse_results`)."""
        found = (self.model_extra or {}).get("problems")
        if not isinstance(found, dict):
            return {}
        return {str(k): str(v) for k, v in found.items()}

    def problems_problem(self) -> str | None:
        """``problems: …`` when the file's broken tasks are not a map of names to reasons."""
        found = (self.model_extra or {}).get("problems")
        if found is None:
            return None
        if not isinstance(found, dict) or not all(
                isinstance(v, str) and len(k) <= _PROBLEM_CHARS and len(v) <= _PROBLEM_CHARS
                for k, v in found.items()):
            return ("problems: must map each broken task's name to why it was not run "
                    f"(strings of at most {_PROBLEM_CHARS} characters)")
        return None

    def interruption_note(self) -> str | None:
        """One line saying the run was interrupted and how many runs are missing, or None."""
        if self.interrupted is None:
            return None
        n = len(self.interrupted.missing)
        return (f"run was interrupted ({printable(self.interrupted.reason)}) with "
                f"{n} planned run{'s' if n != 1 else ''} missing")

    @property
    def simulated(self) -> bool:
        """Whether the file's runs were answered by the built-in simulator, not by a model
        through the API (its model is labelled so: :func:`model_label`)."""
        return self.model.endswith(SIMULATOR_LABEL)


#: how long a broken task's name or reason in a results file may be (the loader's reasons are
#: one line; a name is a directory's)
_PROBLEM_CHARS = 20_000


#: what a model's label ends with when the built-in simulator stood in for it (``--sim``)
SIMULATOR_LABEL = "(simulator)"


def model_label(model: str, simulated: bool) -> str:
    """How the results name an agent's model: the simulator's runs never pass for the API's."""
    return f"{model} {SIMULATOR_LABEL}" if simulated else model


def net_raw_note(*arms: Results) -> str | None:
    """One line naming the tasks whose container kept NET_RAW in any of ``arms``
    (``[suite].net_raw``: the raw sockets the gate otherwise drops), or None."""
    names = sorted({tid for arm in arms for tid, info in arm.suite.tasks.items()
                    if info.net_raw})
    if not names:
        return None
    shown = ", ".join(printable(n)[:80] for n in names[:_NET_RAW_SHOWN])
    more = f" and {len(names) - _NET_RAW_SHOWN} more" if len(names) > _NET_RAW_SHOWN else ""
    return f"raw sockets (NET_RAW) kept by [suite].net_raw for: {shown}{more}"


_NET_RAW_SHOWN = 4

#: a model id as the gate repeats it from a results file (anything else is "the model")
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:-]{0,99}")


class CachePrefix(NamedTuple):
    """An arm's shared prefix (its agent's tools + system prompt, the part every request
    repeats) as its results file records it (``cache_prefix``): its tokens, by the API's own
    count, and the model's minimum cacheable length. Below it the API caches none of the
    prefix and says nothing; what the conversation caches, once long enough, it still does."""

    model: str
    tokens: int
    minimum: int

    @property
    def cached(self) -> bool:
        return self.tokens >= self.minimum

    def statement(self) -> str:
        """The prefix not cached, as one clause: model, tokens, minimum."""
        return (f"the shared prefix (tools + system prompt, {self.tokens:,} tokens) is under "
                f"{self.model}'s minimum cacheable length ({self.minimum:,}): not cached")

    def brief(self) -> str:
        """The same in a table's cell: ``prefix not cached (338 < 1,024 tokens, model)``."""
        return f"prefix not cached ({self.tokens:,} < {self.minimum:,} tokens, {self.model})"


def cache_prefix(results: Results) -> CachePrefix | None:
    """What ``results`` records of its shared prefix, or None: an older file, an agent whose
    requests the gate does not know (a command agent), or a record that is not one."""
    raw = (results.model_extra or {}).get("cache_prefix")
    if not isinstance(raw, dict):
        return None
    tokens, minimum, model = raw.get("tokens"), raw.get("minimum"), raw.get("model")
    if not (type(tokens) is int and type(minimum) is int
            and 0 <= tokens < 10**9 and 0 < minimum < 10**9):
        return None
    named = isinstance(model, str) and _MODEL_ID.fullmatch(model) is not None
    return CachePrefix(model if named else "the model", tokens, minimum)  # type: ignore[arg-type]


def valid_runs(runs: Iterable[RunResult]) -> list[RunResult]:
    """The runs that measured the agent (:attr:`RunResult.valid`), in their order."""
    return [r for r in runs if r.valid]


def runs_by_task(runs: Iterable[RunResult]) -> dict[str, list[RunResult]]:
    """The runs grouped by task id, tasks and runs in the order they came."""
    out: dict[str, list[RunResult]] = {}
    for r in runs:
        out.setdefault(r.task, []).append(r)
    return out


def transcripts_dir(results_path: Path) -> Path:
    """Where the runs of the results file ``results_path`` keep their transcripts: beside it,
    ``X.json`` → ``X.transcripts/`` (``gate run -o X.json`` writes them there; the report, a
    merge of shards and ``gate ci`` read them there)."""
    return results_path.with_name(f"{results_path.stem}.transcripts")


def summarize(runs: Iterable[RunResult]) -> Summary:
    """Summary fields. ``total`` excludes infra errors; cost and tokens include them (billed).

    ``cost_usd``, ``tokens`` and ``cache_hit_rate`` are measured; ``overhead_usd`` (the warm
    starts' cache-write premium, suite overhead) is on its own, and ``spend_usd`` is what the
    runs really cost (``cost_usd + overhead_usd``).
    """
    runs = list(runs)
    valid = valid_runs(runs)
    passed = sum(1 for r in valid if r.status == "passed")
    usage = sum((r.usage for r in runs), Usage())
    overhead = sum(r.overhead_usd or 0.0 for r in runs)
    extra: dict[str, object] = {
        "tokens": usage.model_dump(),
        "billed_tokens": sum((r.billed_usage or r.usage for r in runs), Usage()).model_dump(),
        "duration_s": (round(sum(r.duration_s for r in runs if r.duration_s is not None), 3)
                       if all(r.duration_s is not None for r in runs) else None)}
    return Summary(
        passed=passed,
        failed=len(valid) - passed,
        errors=len(runs) - len(valid),
        total=len(valid),
        pass_rate=passed / len(valid) if valid else None,
        mean_turns=sum(r.turns for r in valid) / len(valid) if valid else None,
        cost_usd=round(sum(r.cost_usd for r in runs), 6),
        cache_hit_rate=usage.cache_hit_rate,
        overhead_usd=round(overhead, 6),
        spend_usd=round(sum(r.cost_usd for r in runs) + overhead, 6),
        **extra,
    )


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso_ms() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso_us() -> str:
    """To the microsecond: a results file's ``created_at`` is part of its identity when it is
    pooled (two refreshes of one commit may finish within the same second)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def new_results(
    *, model: str, agent: AgentInfo, suite: SuiteInfo, commit: str | None,
    runs: list[RunResult] | None = None, schedule: Schedule | None = None, **extra: object,
) -> Results:
    runs = list(runs or [])
    return Results.model_validate({
        "schema_version": 1, "gate_version": __version__, "created_at": now_iso_us(),
        "commit": commit, "model": model, "agent": agent, "suite": suite, "runs": runs,
        "summary": summarize(runs), "schedule": schedule, **extra,
    })


def write_results(path: str | os.PathLike[str], results: Results) -> None:
    """Recompute the summary and write atomically."""
    results.summary = summarize(results.runs)
    atomic_write_json(path, results.model_dump(mode="json", exclude_none=False))


def load_results(path: str | os.PathLike[str], what: str = "results file") -> Results:
    """Load a results file (or a baseline): bounded, validated, every run unique and of a task
    of the file's suite; any problem is one ``BadInput`` naming the file and the field."""
    return parse_results(read_bytes(path, RESULTS_LIMIT, what), path, what)


def parse_results(data: bytes, where: str | os.PathLike[str],
                  what: str = "results file") -> Results:
    """:func:`load_results` for bytes already read (e.g. the base branch's baseline, read
    with git); ``where`` names them in errors."""
    if len(data) > RESULTS_LIMIT:
        raise BadInput(f"{where}: {what} is larger than {RESULTS_LIMIT // 2**20} MiB")
    parsed = parse_json(data, where, what, max_values=RESULTS_MAX_VALUES)
    if not isinstance(parsed, dict):
        raise BadInput(f"{where}: {what} must be a JSON object")
    try:
        results = Results.model_validate(parsed)
    except ValidationError as exc:
        raise BadInput(f"{where}: invalid {what}: {describe_validation_error(exc)}") from None
    problem = (results.run_problem() or results.problems_problem()
               or (results.plan.problem(results.suite) if results.plan is not None else None))
    if problem:
        raise BadInput(f"{where}: invalid {what}: {problem}")
    return results


# -- the journal: each finished run appended as it lands ----------------------------------------

JOURNAL_SUFFIX = ".journal.jsonl"


def journal_path(output: str | os.PathLike[str]) -> Path:
    """``results.json`` → ``results.journal.jsonl``, next to it."""
    out = Path(output)
    return out.with_name(out.stem + JOURNAL_SUFFIX)


class Journal:
    """An append-only JSONL file: a header line (what the run is), then one line per finished
    run, each flushed and fsync'd as it lands, so a run killed at any moment (SIGKILL) loses at
    most the run it was writing. Appending is O(1) per run; the results file is written from
    the journal once, at the end."""

    def __init__(self, path: Path, header: dict[str, object], runs: Iterable[RunResult] = (),
                 *, resume: bool = False) -> None:
        self.path = path
        self._lock = threading.Lock()
        if resume:
            # a line torn by the kill is dropped first, so the next line starts on its own
            with path.open("rb+") as fh:
                data = fh.read()
                fh.truncate(data.rfind(b"\n") + 1)
            self._fh = path.open("a", encoding="utf-8")
        else:
            self._fh = path.open("w", encoding="utf-8")
            self._line({"type": "header", **header})
            for run in runs:
                self._line({"type": "run", "run": run.model_dump(mode="json")})

    def _line(self, obj: dict[str, object]) -> None:
        self._fh.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, run: RunResult) -> None:
        with self._lock:
            self._line({"type": "run", "run": run.model_dump(mode="json")})

    def close(self) -> None:
        self._fh.close()


def read_journal(path: Path) -> tuple[dict[str, object], list[RunResult]]:
    """(header, runs) of a journal. A last line cut off by a kill is dropped (that run is
    simply run again); a run journaled twice counts once (the first)."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise BadInput(f"{path}: no journal to resume from (the run never started here, or "
                       "was written by an older gate)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read the journal: {exc}") from None
    complete = lines[:-1]  # the text after the last newline is a torn write, or empty
    header: dict[str, object] | None = None
    runs: dict[RunKey, RunResult] = {}
    for i, line in enumerate(complete, 1):
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            if i == 1:
                if obj.get("type") != "header":
                    raise ValueError("the first line is not the header")
                header = obj
                continue
            run = RunResult.model_validate(obj.get("run"))
        except (ValueError, ValidationError) as exc:
            raise BadInput(f"{path}: line {i}: not a journal line "
                           f"({printable(str(exc).splitlines()[0])[:120]})") from None
        runs.setdefault(run.key, run)
    if header is None:
        raise BadInput(f"{path}: the journal has no header line")
    return header, list(runs.values())
