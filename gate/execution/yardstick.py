"""On a pull request only the agent is under test: the yardstick is the base branch's, all of it.

What *is tested* comes from the PR's checkout: ``[agent]`` and the files it names (system prompt,
skills, the command's code). What *measures* comes from the base branch, read with git, never
from the PR's working tree: the tasks with their verify scripts, ``[suite]``, ``[gate]``,
``[ci]``, the baseline and the history. A PR that changes any of those is told so (old → new;
a changed or added task is validated with its oracle) and the change applies after the merge.

``gate ci`` uses this on ``pull_request`` (and in ``check`` mode); ``gate run --base-ref`` and
``gate compare --base-ref`` use the same code locally, so the answer is the same.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from markupsafe import Markup

from gate import _git
from gate._files import CONFIG_LIMIT, HISTORY_LIMIT, RESULTS_LIMIT
from gate.core.config import DEFAULT_CONFIG, GateConfig, parse_config
from gate.core.results import Results
from gate.core.tasks import Suite, load_suite
from gate.errors import BadInput
from gate.execution.runner import RunOptions

# imported now, not when the PR's tasks are validated: by then the suite has run, and the agent
# under test could have rewritten the gate's own files (tests/ci/test_ci_yardstick.py)
from gate.execution.validate import validate_suite
from gate.sandbox import suite_sandboxes

#: The parts of gate.toml that measure (the base branch's on a PR). ``[agent]`` is under test,
#: but for its ``prices``: the price table measures cost, so it is the base's too. The skill
#: conditions (``[conditions]``, like each task's ``metadata.json`` with the tasks) say what a
#: skill is measured against: the base's; the skills themselves (``[agent].skills``, the
#: folder's contents) are the agent's, the PR's.
MEASURING_SECTIONS = ("suite", "gate", "ci", "conditions")
#: Changed or added tasks validated with their oracle per PR (each is a few script runs).
MAX_VALIDATED = 10
#: Task and workflow lines shown per comment (the rest are counted).
MAX_LINES = 30
#: Characters of the comment the yardstick's lines may take (each line is already cut, but a
#: PR chooses how many there are and what they quote): past it, the rest are counted, and
#: the job's log lists them all. The report's per-task table keeps the room it needs.
NOTE_BUDGET = 12_000
#: Paths whose change on a PR is flagged: on ``pull_request`` the action's inputs come from the
#: PR's own workflow files, so a change there already applies to the run judging it.
WORKFLOW_PATHS = (".github/workflows", ".github/actions")


@dataclass(frozen=True)
class SettingChange:
    key: str  # e.g. "[gate].alpha"
    base: object
    pr: object


@dataclass(frozen=True)
class TaskChange:
    task: str
    change: str  # "added" | "removed" | "changed" | "broken"
    detail: str = ""  # what validation with the oracle found, or why it cannot load
    sound: bool | None = None  # validated: True/False; not validated: None


@dataclass(frozen=True)
class BaselineSource:
    """Where a base branch's baseline and history may be read: a ref and a path prefix on it.

    ``note`` says why this is not the base branch's own copy (None when it is)."""

    ref: str
    prefix: str = ""  # "main/" on a data branch
    label: str = ""  # how it is named to people, e.g. "main" or "agent-gate-data (main/)"
    note: str | None = None


#: The candidates, in order, for the joined configuration: the first with a baseline wins.
Sources = Callable[[GateConfig], Iterator[BaselineSource]]


@dataclass
class Yardstick:
    """The base branch's measuring half, joined with the PR's agent."""

    ref: str
    label: str  # how the base is named to people, e.g. "main"
    config: GateConfig  # [agent] from the PR (its prices the base's); [suite], [gate], [ci] too
    tasks_dir: Path  # the base's suite, extracted to a private directory
    baseline_rel: str
    baseline_text: str | None
    history_text: str | None
    settings: list[SettingChange] = field(default_factory=list)
    tasks: list[TaskChange] = field(default_factory=list)
    workflows: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the baseline or history, edited
    pr_suite: Suite | None = None
    unreadable: str | None = None  # why the PR's own suite could not be read, if it could not
    base_digest: str = ""  # the base suite's digest: results measured with it compare in full
    baseline_from: str = ""  # where the baseline and history were read (a branch, a data branch)
    baseline_note: str | None = None  # why not the base branch's own copy, if it was not
    # the baseline's traces sidecar (gate/core/traces.py) from the same place, when one is kept
    traces_text: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.settings or self.tasks or self.workflows or self.files
                    or self.unreadable)

    def validate_changed_tasks(self, registry: bool = False) -> None:
        """Run verify untouched and after the oracle on the PR's added and changed tasks
        (``registry``: a missing image may be pulled, as on GitHub's runners)."""
        suite = self.pr_suite
        if suite is None:
            return
        wanted = [t.task for t in self.tasks if t.change in ("added", "changed")]
        picked = tuple(t for t in suite.tasks if t.id in wanted[:MAX_VALIDATED])
        if not picked:
            return
        pr_cfg = self.config.suite
        # the base's [suite] says where tasks run
        with suite_sandboxes(pr_cfg, registry=registry) as provider:
            checks = validate_suite(Suite(root=suite.root, tasks=picked), provider=provider,
                                    options=RunOptions(verify_timeout=pr_cfg.verify_timeout,
                                                       task_timeout=pr_cfg.task_timeout))
        found = {c.task: c for c in checks}
        for i, t in enumerate(self.tasks):
            c = found.get(t.task)
            if c is not None:
                self.tasks[i] = TaskChange(t.task, t.change,
                                           (f"sound ({c.note})" if c.note else
                                            "sound with its oracle") if c.sound
                                           else f"broken: {c.problem}", c.sound)

    def baseline_notes(self, baseline: Results, *, stale_after_days: float,
                       now: datetime | None = None) -> list[str]:
        """The comment's lines about the baseline: where it came from when it is not the base
        branch's own, its depth and age, and a warning when it is stale."""
        from gate.pool.baseline import depth, describe_depth
        from gate.report import code_span

        now = now or datetime.now(UTC)
        where = code_span(self.baseline_from or self.label)
        line = f"Baseline from {where}: {describe_depth(baseline, now=now)}."
        if self.baseline_note:
            line = f"{self.baseline_note} {line}"
        age = depth(baseline).age_days(now)
        if age is not None and age > stale_after_days:
            line += (f" ⚠️ **Stale:** older than {stale_after_days:g} days "
                     "(`[ci] stale_after_days`): the model behind it may have changed since; "
                     "refresh it (a push to the branch, or a manual `mode: main` run).")
        return [line]

    # ----- how the changes are told ---------------------------------------------------------

    def lines(self, *, markdown: bool) -> list[str]:
        """One line per change, untrusted values escaped for where they go."""
        from gate.report import md, plain

        def t(text: object, limit: int = 80) -> str:
            return str(md(text, limit)) if markdown else plain(text, limit)

        def v(value: object) -> str:
            return t(json.dumps(value))  # a setting's value, TOML-like: "text", true, [..]

        def code(text: str) -> str:  # trusted names (schema keys, our own words)
            return f"`{text}`" if markdown else text

        out: list[str] = []
        if self.unreadable:
            out.append(f"the PR's own suite cannot be read: {t(self.unreadable, 200)}")
        for s in self.settings:
            out.append(f"{code(s.key)}: {v(s.base)} → {v(s.pr)}")
        for f in self.files:
            out.append(f"{t(f, 120)}: edited by this PR (the base's copy is used; main "
                       "refreshes its own)")
        for i, tc in enumerate(self.tasks):
            if i == MAX_LINES:
                out.append(f"… and {len(self.tasks) - i} more task changes")
                break
            what = {"added": "added by this PR (not gated until merged)",
                    "removed": "removed by this PR (still gated here)",
                    "changed": "changed by this PR (judged with the base's copy)",
                    "broken": "cannot load in this PR"}[tc.change]
            detail = f"; {t(tc.detail, 160)}" if tc.detail else ""
            if tc.change in ("added", "changed") and tc.sound is None:
                detail += f"; not validated here (gate validate --task {t(tc.task, 60)})"
            out.append(f"task {t(tc.task, 60)}: {what}{detail}")
        if len(self.workflows) > MAX_LINES:
            out.append(f"{len(self.workflows) - MAX_LINES} more workflow files changed")
        for w in self.workflows[:MAX_LINES]:
            out.append(f"workflow {t(w, 120)}: changed. On a pull request the action's "
                       "inputs come from the PR's own workflow file, so this change already "
                       "applies to this check: review it")
        return out

    def note(self) -> Markup | None:
        """The comment's visible paragraph: the yardstick changes and when they apply."""
        from gate.report import code_span

        if not self.changed:
            return None
        lines = self.lines(markdown=True)
        items, size = "", 0
        for i, line in enumerate(lines):
            size += len(line) + 5
            if size > NOTE_BUDGET:
                items += f"\n> - … and {len(lines) - i} more (the job's log lists them all)"
                break
            items += f"\n> - {line}"
        return Markup(
            f"This PR changes what measures it. It was judged with {code_span(self.label)}'s "
            "tasks, settings and baseline; these changes apply after the merge:" + items)


@contextlib.contextmanager
def open_yardstick(cfg: GateConfig, *, root: Path, ref: str, label: str | None = None,
                   tasks_override: Path | None = None,
                   sources: Sources | None = None) -> Iterator[Yardstick]:
    """The base branch's yardstick at ``ref`` for the PR configuration ``cfg`` (the working
    tree's). The base's suite lives in a private temporary directory until the block ends.

    The baseline and the history come from the first of ``sources`` that has a baseline
    (default: ``local_sources``, the base ref itself, after the data branch when the base's
    ``[ci]`` keeps the baseline on one)."""
    label = label or ref
    if _git.git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BadInput(f"--base-ref {ref}: no such commit or branch in {root} (fetch it first: "
                       f"git fetch origin {ref.removeprefix('origin/')})")
    source = cfg.source or (cfg.root / DEFAULT_CONFIG)
    # the path as named in the checkout: a symlink the PR planted must not point elsewhere
    parent = _git.repo_relative(root, source.parent)
    config_rel = source.name if parent == "." else f"{parent}/{source.name}"
    base_text = _git.show_bounded(root, ref, config_rel, CONFIG_LIMIT, label)
    where = f"{config_rel} on {label}"
    base = (parse_config(base_text, where=where, root=cfg.root) if base_text is not None
            else GateConfig(root=cfg.root))
    # the price table measures cost: a PR that prices its model at 0 must not hide its spend
    agent = cfg.agent.model_copy(update={"prices": base.agent.prices})
    joined = GateConfig(agent=agent, suite=base.suite, gate=base.gate, ci=base.ci,
                        conditions=base.conditions, root=cfg.root, source=cfg.source)
    tasks_path = tasks_override or joined.path(base.suite.tasks)
    tasks_rel = _git.repo_relative(root, tasks_path)
    baseline_rel = _git.repo_relative(root, joined.path(base.gate.baseline))
    history_rel = _git.repo_relative(root, joined.path(base.ci.history))

    with tempfile.TemporaryDirectory(prefix="gate-base-") as tmp:
        tasks_dir = _extract(root, ref, tasks_rel, Path(tmp), label)
        found = _read_baseline(root, (sources or local_sources(root, ref, label))(joined),
                               baseline_rel, history_rel)
        ys = Yardstick(
            ref=ref, label=label, config=joined, tasks_dir=tasks_dir,
            baseline_rel=baseline_rel,
            baseline_text=found[1] if found else None,
            history_text=found[2] if found else None,
            baseline_from=found[0].label if found else label,
            baseline_note=found[0].note if found else None,
            traces_text=_read_traces(root, found[0], baseline_rel) if found else None,
            settings=_setting_changes(base, cfg),
            workflows=_changed_paths(root, ref, WORKFLOW_PATHS),
            files=_changed_paths(root, ref, (baseline_rel, history_rel)),
        )
        base_suite = load_suite(tasks_dir)
        ys.base_digest = base_suite.digest
        pr_tasks = tasks_override or cfg.path(cfg.suite.tasks)
        try:
            ys.pr_suite = load_suite(pr_tasks)
        except BadInput as exc:
            ys.unreadable = str(exc)
        if ys.pr_suite is not None:
            ys.tasks = _task_changes(base_suite, ys.pr_suite)
        yield ys


def local_sources(root: Path, ref: str, label: str) -> Sources:
    """Where ``gate run/compare --base-ref`` read the baseline: the data branch as this clone
    knows it (``origin/<data_branch>``, else a local branch), when the base's ``[ci]`` keeps the
    baseline there; then the base ref itself."""
    branch = label.removeprefix("origin/")

    def sources(joined: GateConfig) -> Iterator[BaselineSource]:
        if joined.ci.baseline_refresh == "branch":
            data = joined.ci.data_branch
            for candidate in (f"origin/{data}", data):
                if _git.git(root, "rev-parse", "--verify", "--quiet",
                            f"{candidate}^{{commit}}").returncode == 0:
                    yield BaselineSource(candidate, f"{branch}/", f"{data} ({branch}/)")
                    break
        yield BaselineSource(ref, "", label)

    return sources


def _read_baseline(root: Path, sources: Iterator[BaselineSource], baseline_rel: str,
                   history_rel: str) -> tuple[BaselineSource, str, str | None] | None:
    for src in sources:
        text = _git.show_bounded(root, src.ref, src.prefix + baseline_rel, RESULTS_LIMIT, src.label)
        if text is not None:
            return src, text, _git.show_bounded(root, src.ref, src.prefix + history_rel,
                                           HISTORY_LIMIT, src.label)
    return None


def _read_traces(root: Path, src: BaselineSource, baseline_rel: str) -> str | None:
    """The baseline's traces sidecar next to it (evidence for the comment, never part of the
    yardstick): absent, too large or unreadable, there is none."""
    from gate.core.traces import SIDECAR_LIMIT, sidecar_rel

    try:
        return _git.show_bounded(root, src.ref, src.prefix + sidecar_rel(baseline_rel),
                            SIDECAR_LIMIT, src.label)
    except BadInput:
        return None


def archive(root: Path, ref: str, dest: Path, *paths: str) -> str | None:
    """Write the tree of ``ref`` (only ``paths``, when given) under ``dest`` with ``git
    archive``, modes kept (the task digest covers executable bits). Returns git's last error
    line when it failed, else None."""
    proc = subprocess.Popen(["git", "archive", "--format=tar", ref, "--", *paths], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    except tarfile.TarError:
        pass  # git said why on stderr; reported below
    finally:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.wait()
    return _last_line(err) if proc.returncode != 0 else None


def _extract(root: Path, ref: str, rel: str, dest: Path, label: str) -> Path:
    """``rel`` as it is at ``ref``, written under ``dest``. Returns the extracted directory."""
    failed = archive(root, ref, dest, rel)
    out = dest / rel
    if failed is not None or not out.is_dir():
        raise BadInput(f"{rel}: no task suite there on the base branch {label}: a PR is judged "
                       f"with the base branch's tasks ({failed or 'git archive failed'})")
    return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "git archive failed"


def _setting_changes(base: GateConfig, pr: GateConfig) -> list[SettingChange]:
    out: list[SettingChange] = []
    def dump(cfg: GateConfig, section: str) -> dict[str, object]:
        value = getattr(cfg, section)
        if isinstance(value, dict):  # [conditions]: one entry per named condition
            return {k: v.model_dump(mode="json") for k, v in value.items()}
        return dict(value.model_dump(mode="json"))

    for section in MEASURING_SECTIONS:
        old, new = dump(base, section), dump(pr, section)
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                out.append(SettingChange(f"[{section}].{key}", old.get(key), new.get(key)))
    old_prices = base.agent.model_dump(mode="json")["prices"]
    new_prices = pr.agent.model_dump(mode="json")["prices"]
    if old_prices != new_prices:
        out.append(SettingChange("[agent].prices", old_prices, new_prices))
    return out


def _task_changes(base: Suite, pr: Suite) -> list[TaskChange]:
    old = {t.id: t.digest for t in base.tasks}
    new = {t.id: t.digest for t in pr.tasks}
    broken = {p.name: p.reason for p in pr.problems}
    # broken on the base as well: not this PR's change (the run names it as broken)
    same = {p.name for p in base.problems} & set(broken)
    out: list[TaskChange] = []
    for tid in sorted(set(old) | set(new) | set(broken)):
        if tid in same:
            continue
        if tid in broken:
            out.append(TaskChange(tid, "broken", broken[tid], False))
        elif tid not in new:
            out.append(TaskChange(tid, "removed"))
        elif tid not in old:
            out.append(TaskChange(tid, "added"))
        elif old[tid] != new[tid]:
            out.append(TaskChange(tid, "changed"))
    return out


def _changed_paths(root: Path, ref: str, paths: tuple[str, ...]) -> list[str]:
    """Files under ``paths`` that this PR changes: git's diff from where it left ``ref``
    (their merge base) to its head commit. The working tree is not the PR: a file a run left
    behind, tracked or not, is nobody's edit (``_git.pr_changed_files``, three dots). A
    shallow clone without the merge base (a pull request's merge commit) compares ``ref``'s
    tree with the head's."""
    found = [_git.pr_changed_files(root, ref, p) for p in paths]
    if all(f is not None for f in found):
        return sorted({n for f in found for n in f or ()})
    r = _git.git(root, "diff", "--name-only", "--no-renames", ref, "HEAD", "--", *paths)
    if r.returncode != 0:
        return []
    return sorted({n for n in r.stdout.splitlines() if n.strip()})
