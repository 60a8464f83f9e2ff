"""Stage 2, *plan*: everything the verdict depends on, decided before any agent runs.

For a judged run (pr, check) the plan opens the **yardstick** — the base branch's tasks,
``[suite]``, ``[gate]``, ``[ci]``, baseline and history (gate/execution/yardstick.py); only
``[agent]`` is the checkout's — and then says how the run is judged (against that baseline, or by a
same-job A/B when there is none or ``[ci] judge = "ab"``), which notes the comment carries
from the start (the PR edits the baseline file, a stale or fallback baseline), and which skill
conditions the PR adds. For main's refresh it says where the pooled baseline goes (``Place``)
and what it starts from (``State``, read before the suite), and the conditions the baseline
keeps. No suite runs here, and nothing here is changed by a later stage.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from gate import _git
from gate._files import HISTORY_LIMIT, RESULTS_LIMIT, read_text
from gate.ci import _skills
from gate.ci._context import Context
from gate.ci._event import Event
from gate.ci._forge import ChangeRequest
from gate.ci._skills import ConditionPlan
from gate.ci._yardstick import base_baseline, open_base
from gate.core.config import CISettings, GateConfig
from gate.core.results import Results, parse_results
from gate.core.traces import SIDECAR_LIMIT
from gate.errors import BadInput, GateError, Unmeasurable
from gate.execution.run import RunRequest
from gate.pool.refresh import Place, State, data_paths, read_state, traces_path
from gate.report import code_span, render_note

if TYPE_CHECKING:
    from gate.execution.yardstick import BaselineSource, Sources, Yardstick


@dataclass(frozen=True)
class Basis:
    """What a pr/check run is measured by: the base branch's yardstick, ``[ci]`` as the base
    branch sets it (with the CLI's overrides), and the run request on the base's tasks."""

    ys: Yardstick
    root: Path
    settings: CISettings
    request: RunRequest

    @property
    def config(self) -> GateConfig:
        return self.ys.config


@dataclass(frozen=True)
class Plan:
    """How a pr/check run is judged, before anything runs."""

    basis: Basis
    pr: ChangeRequest | None
    edited: bool  # the PR edits the baseline file (it is read from the base branch anyway)
    notes: tuple[str, ...]
    by_ab: bool  # judged by a same-job A/B (no baseline anywhere, or [ci] judge = "ab")
    ab_why: Markup | None
    baseline: Results | None  # the base branch's baseline (None: by A/B)
    conditions: ConditionPlan | None  # the skill conditions this PR adds


@dataclass(frozen=True)
class RefreshPlan:
    """Where main's refresh pools to, and what it starts from (read before the suite)."""

    root: Path
    settings: CISettings
    request: RunRequest
    baseline_path: Path
    history_path: Path
    place: Place | None  # None: the files are left for an artifact
    git_state: str  # the checkout's git configuration, to check before pushing with the token
    start: State
    conditions: ConditionPlan | None


def code(text: str) -> Markup:
    """A configured name (the accept label, a path, a branch) as inline code."""
    return code_span(text)


@contextlib.contextmanager
def open_basis(ctx: Context, base_branch: str, settings_seen: Callable[[CISettings], None]
               ) -> Iterator[Basis]:
    """From here on, everything that measures is ``base_branch``'s (the yardstick). The
    templates and the judge's modules load first: nothing that tells the verdict is read from
    the checkout after the suite."""
    from gate.report import preload_html, preload_templates

    preload_templates()
    import numpy.random  # noqa: F401  (numpy loads it on first use: the judge's draws)

    import gate.pool.evidence  # noqa: F401  (nor imported: the comment's evidence)

    preload_html()  # the HTML report is written after the suite too
    req = ctx.opts.run
    root = _git.toplevel(req.config.root)
    base_ref = ctx.forge.ensure_base_ref(root, base_branch)
    from gate.execution.ab import GATE_IS_NEW, config_rel, gate_is_new

    if gate_is_new(req.config, root=root, ref=base_ref):
        raise Unmeasurable(GATE_IS_NEW.format(config=config_rel(req.config, root),
                                              label=base_branch))
    with measured_by(req, base_ref, root=root, label=base_branch,
                     sources=_baseline_sources(ctx, root, base_branch, base_ref)) as (ys, request):
        settings = ctx.opts.overrides.apply(ys.config.ci)
        settings_seen(settings)
        if ctx.opts.rejudge is not None:  # the results judged are the stored ones
            request = dataclasses.replace(request, output=ctx.opts.rejudge)
        yield Basis(ys, root, settings, request)


@contextlib.contextmanager
def measured_by(req: RunRequest, ref: str, *, root: Path | None = None, label: str | None = None,
                sources: Sources | None = None) -> Iterator[tuple[Yardstick, RunRequest]]:
    """``ref``'s yardstick, and ``req`` measured by it: ``ref``'s tasks, ``[suite]``,
    ``[gate]`` and ``[ci]``; only ``[agent]`` is ``req``'s. ``gate ci`` on a PR and
    ``gate run --base-ref`` (the same answer locally) both measure this way; ``gate compare
    --base-ref`` opens the same yardstick (``open_base``)."""
    with open_base(req.config, ref, root=root, label=label, tasks_override=req.tasks_dir,
                   sources=sources) as ys:
        # the tasks are ``ref``'s: no PR can fix a broken one, so the rest runs and it is
        # judged as broken (never "removed"), not a refusal of every PR
        yield ys, dataclasses.replace(req, config=ys.config, tasks_dir=ys.tasks_dir,
                                      skip_broken=True)


def _baseline_sources(ctx: Context, root: Path, base_branch: str, base_ref: str
                      ) -> Callable[[GateConfig], Iterator[BaselineSource]]:
    """Where the base branch's baseline is looked for, in order: the data branch (when the
    base's [ci] keeps it there), the base branch's own copy, then the same two for the
    default branch (a PR into a branch that has no baseline of its own). Fetched lazily."""
    from gate.execution.yardstick import BaselineSource

    default = ctx.env.default_branch

    def sources(joined: GateConfig) -> Iterator[BaselineSource]:
        settings = ctx.opts.overrides.apply(joined.ci)
        data = settings.data_branch
        data_ref: str | None = None
        if settings.baseline_refresh == "branch":
            if ctx.forge.fetch_branch(root, data):
                data_ref = ctx.forge.remote_ref(data)
            else:
                ctx.log(f"gate ci: the data branch {data} does not exist yet")
        branches = [base_branch] + ([default] if default and default != base_branch else [])
        for branch in branches:
            fallback = (f"{code(base_branch)} has no baseline of its own: this PR is "
                        f"judged against {code(branch)}'s (the default branch)."
                        if branch != base_branch else None)
            if data_ref:
                yield BaselineSource(data_ref, data_paths(branch, ""),
                                     f"{data} ({data_paths(branch, '')})", fallback)
            try:
                ref = (base_ref if branch == base_branch
                       else ctx.forge.ensure_base_ref(root, branch))
            except BadInput as exc:
                ctx.io.warning(f"no fallback baseline from {branch}: {exc}")
                continue
            note = fallback
            if data_ref and branch == base_branch:
                note = (f"The data branch {code(data)} has no baseline for "
                        f"{code(branch)} yet: judged against the copy committed on "
                        f"{code(branch)}.")
            yield BaselineSource(ref, "", branch, note)

    return sources


@dataclass(frozen=True)
class AgentChange:
    """The PR's agent against the baseline's: its fingerprint, and the parts that differ."""

    fingerprint: str
    changed: tuple[str, ...]


def agent_change(basis: Basis) -> AgentChange | None:
    """How the PR's agent differs from the one the base branch's baseline measured, for kinds
    whose fingerprint covers all the agent does (``self_contained``); ``None`` for another
    kind, or with no baseline of this kind on the base branch."""
    from gate.agents import agent_kind
    from gate.core.fingerprint import fingerprint, fingerprint_parts

    req = basis.request
    kind = req.agent_kind or req.config.agent.kind
    spec = agent_kind(kind)
    baseline = base_baseline(basis.ys) if spec.self_contained else None
    if baseline is None or baseline.agent.kind != kind:
        return None
    cfg = req.config
    if req.model:  # the `model` input runs another model than gate.toml's: another agent
        cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(update={"model": req.model})})
    parts = fingerprint_parts(cfg, spec)
    fp = fingerprint(parts, kind)
    if fp == baseline.agent.fingerprint:
        return AgentChange(fp, ())
    old = baseline.agent.parts
    return AgentChange(fp, tuple(sorted(k for k in {*parts, *old} if parts.get(k) != old.get(k))))


def unchanged_agent(basis: Basis) -> str | None:
    """The agent's fingerprint when it is the baseline's agent's and covers all the agent
    does: a PR under which nothing under test changed. ``None`` otherwise."""
    change = agent_change(basis)
    return change.fingerprint if change is not None and not change.changed else None


def make_plan(ctx: Context, event: Event, basis: Basis) -> Plan:
    """How this pr/check run is judged. Refuses (exit 3) a run with no baseline anywhere
    when the base branch does not allow judging by a same-job A/B."""
    ys, pr = basis.ys, event.pr
    rel, text = ys.baseline_rel, ys.baseline_text
    how = basis.settings.judge
    edited = pr is not None and _pr_edits(ctx, basis.root, ys.ref, rel, pr)
    notes: list[str] = []
    if edited:
        notes.append(render_note("baseline_edited", path=code(rel), branch=code(ys.label)))
    for name in ("reward_unprotected", "tamper_exempt"):  # the base's [suite]
        if tasks := getattr(basis.config.suite, name):
            notes.append(_tasks_note(name, tasks))
    if how == "ab" or (how == "auto" and text is None):
        forced = code('[ci] judge = "ab"')
        why = (Markup(f"{forced} on {code(ys.label)}") if how == "ab" else Markup(
            f"no baseline for {code(ys.label)} anywhere (the data branch, the branch itself, "
            f"the default branch): the first one comes from the refresh on a push to "
            f"{code(ys.label)}"))
        return Plan(basis, pr, edited, tuple(notes), True, why, None, None)
    baseline = base_baseline(ys)
    if baseline is None:
        raise Unmeasurable(
            f"no {rel} on the base branch {ys.label}: the gate has nothing to compare "
            f"with. Refresh it on {ys.label} first (this action on a push to "
            f"{ys.label}, with [ci] baseline_refresh = \"branch\" or \"commit\" in gate.toml), "
            "or commit one made "
            "by `gate run` + `gate baseline`; or set [ci] judge = \"auto\" on "
            f"{ys.label} to judge PRs by a same-job A/B until then")
    notes[:0] = ys.baseline_notes(baseline, stale_after_days=basis.settings.stale_after_days)
    # which skill conditions this PR adds: decided (git, task metadata) before any agent runs
    conditions = (_pr_conditions(ctx, basis, pr, baseline)
                  if event.source == "fresh" else None)
    return Plan(basis, pr, edited, tuple(notes), False, None, baseline, conditions)


def _tasks_note(name: str, tasks: list[str], shown: int = 20) -> str:
    """One line naming the tasks a ``[suite]`` list (``name``) leaves less protected from
    the agent."""
    names = sorted(set(tasks))
    listed = Markup(", ").join(code(t) for t in names[:shown])
    if len(names) > shown:
        listed += Markup(f" and {len(names) - shown} more")
    return render_note(name, tasks=listed)


def _pr_edits(ctx: Context, root: Path, base_ref: str, rel: str, pr: ChangeRequest) -> bool:
    changed = _git.pr_changes_file(root, base_ref, rel)
    if changed is not None:
        return changed
    # a shallow checkout has no merge base: the forge knows the PR's files
    try:
        return rel in ctx.forge.changed_files(pr.number)
    except GateError as exc:
        ctx.io.warning(f"cannot tell whether this PR edits {rel}: {exc}")
        return False


def _pr_conditions(ctx: Context, basis: Basis, pr: ChangeRequest | None,
                   baseline: Results) -> ConditionPlan | None:
    """The conditions this PR runs besides the suite: it touches a skill."""
    cfg, root = basis.config, basis.root
    rel = _skills.skills_rel(cfg, root)
    if rel is None:
        return None
    files = _git.pr_changed_files(root, basis.ys.ref, rel)
    if files is None and pr is not None:  # a shallow checkout: the forge knows the files
        try:
            files = ctx.forge.changed_files(pr.number)
        except GateError as exc:
            ctx.io.warning(f"cannot tell whether this PR changes a skill: {exc}")
    changed = _skills.changed_skills(files or [], rel)
    if not changed:
        return None
    plan = _skills.pr_plan(cfg, basis.request.tasks_dir or cfg.path(cfg.suite.tasks), changed,
                           baseline)
    if plan is None:
        ctx.log(f"gate ci: the PR changes the skill(s) {', '.join(changed)}, but no task "
                "names one as its target_skill: no skill conditions to run")
    return plan


# ----- main's refresh -----------------------------------------------------------------------

def refresh_plan(ctx: Context, event: Event) -> RefreshPlan:
    """Where main's refresh pools to and what it starts from; refused (exit 2) when it would
    commit from no branch, or to the branch being refreshed as its data branch."""
    req = ctx.opts.run
    cfg = req.config
    settings = ctx.opts.overrides.apply(cfg.ci)
    branch = ctx.env.branch
    how = settings.baseline_refresh
    if how != "artifact" and not branch:
        raise BadInput(f"[ci] baseline_refresh = {how!r} needs a run on a branch (GITHUB_REF="
                       f"refs/heads/…), not {ctx.env.ref or 'no ref'}")
    root = _git.toplevel(cfg.root)
    baseline_path = cfg.path(cfg.gate.baseline)
    history_path = cfg.path(settings.history)
    place = _place(root, settings, branch or "", baseline_path, history_path) if branch else None
    git_state = ctx.forge.git_state(root) if place else ""
    start = _start(ctx, root, place, settings, baseline_path, history_path)
    conditions = None if event.source == "merge" else _refresh_conditions(req, start)
    return RefreshPlan(root, settings, req, baseline_path, history_path, place, git_state,
                       start, conditions)


def _place(root: Path, settings: CISettings, branch: str, baseline_path: Path,
           history_path: Path) -> Place | None:
    """Where the refresh commits (None: it leaves files for an artifact)."""
    baseline_rel = _git.repo_relative(root, baseline_path)
    history_rel = _git.repo_relative(root, history_path)
    how = settings.baseline_refresh
    if how == "commit":
        return Place(branch, baseline_rel, history_rel)
    if how == "branch":
        data = settings.data_branch
        if data == branch:
            raise BadInput(f"[ci] data_branch {data!r} is the branch being refreshed: "
                           "name a branch of its own (default agent-gate-data)")
        return Place(data, data_paths(branch, baseline_rel),
                     data_paths(branch, history_rel), data=True)
    return None


def seed(ctx: Context, root: Path, settings: CISettings, head: str | None
         ) -> Callable[[], State]:
    """A data branch without this branch's baseline starts from the checkout's committed
    baseline and history: moving onto a data branch keeps the depth."""
    cfg = ctx.opts.run.config
    base_rel = _git.repo_relative(root, cfg.path(cfg.gate.baseline))
    hist_rel = _git.repo_relative(root, cfg.path(settings.history))
    where = f"the {base_rel} committed on {ctx.env.branch}"
    return lambda: read_state(root, Place("", base_rel, hist_rel), head, seeded_from=where)


def _start(ctx: Context, root: Path, place: Place | None, settings: CISettings,
           baseline_path: Path, history_path: Path) -> State:
    """The baseline and history this refresh starts from, read before the suite runs:
    the checkout's committed files, or the data branch's (seeded from the checkout's
    committed files on its first refresh), or the workspace's files for an artifact."""
    if place is None:
        return State(None, _read_optional(baseline_path, RESULTS_LIMIT, "baseline"),
                     _read_optional(history_path, HISTORY_LIMIT, "history"),
                     traces_text=_read_sidecar(traces_path(baseline_path)))
    head = _git.head(root)
    if not place.data:
        return read_state(root, place, head)
    tip = ctx.forge.fetch_branch(root, place.branch)
    return read_state(root, place, tip, seed=seed(ctx, root, settings, head))


def _refresh_conditions(req: RunRequest, start: State) -> ConditionPlan | None:
    """The conditions main's refresh runs besides the suite, for the baseline to keep."""
    cfg = req.config
    if not cfg.agent.skills:
        return None
    baseline = None
    if start.baseline_text is not None:
        try:
            baseline = parse_results(start.baseline_text.encode(), "the baseline", "baseline")
        except GateError:
            baseline = None  # a damaged baseline is replaced by the refresh
    return _skills.refresh_plan(cfg, req.tasks_dir or cfg.path(cfg.suite.tasks), baseline)


def _read_optional(path: Path, limit: int, what: str) -> str | None:
    return read_text(path, limit, what) if path.exists() else None


def _read_sidecar(path: Path) -> str | None:
    """The workspace's traces sidecar; one that cannot be read is replaced, never an error."""
    try:
        return _read_optional(path, SIDECAR_LIMIT, "baseline traces")
    except GateError:
        return None
