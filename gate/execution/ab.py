"""Same-job A/B: the base commit's agent and the PR's, run in one job and judged as a pair.

When no baseline exists anywhere (a first PR, a new base branch) — or when ``[ci] judge =
"ab"`` asks for it — the PR is not judged against a stored baseline but against its base
commit's agent, run here and now: the base's ``[agent]`` and the files it names (system
prompt, skills), read from the base commit's tree extracted with git to a private directory.
Everything that measures is the base branch's, for both arms (as for every PR judgement):
the tasks, ``[suite]``, ``[gate]``, ``[ci]`` and the price table.

The two arms share one plan, one pool of ``jobs``, one set of sandboxes and one meter (one
simulator under ``--sim``) — one :mod:`gate.execution.session`, as a plain run has — interleaved run
by run: each (task, replication) runs both arms, in the order base-PR for even pairs and
PR-base for odd ones (ABBA), so neither arm always goes first. Both arms run the same plan
(gate/compare/_plan.py), one look of it, made before either runs from the base's committed
baseline when there is one (source "independent": the base arm is measured afresh, so the
tests condition on nothing), else every task the same replications (source "none"). Both
arms meet the same provider, the same time of day and the same load: exchangeable by
construction and immune to provider drift, at twice the cost.

Each arm is written to its own results file (``results.json`` for the PR's agent,
``results.base.json`` for the base's; every run records its ``arm``, each file its
``schedule.arm``), and :func:`gate.compare.judge` judges the pair like any other two files,
so ``gate compare results.base.json results.json`` gives the same verdict.

A same-job A/B is not journaled: ``--resume`` is refused (the pair is only judged whole).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gate._files import CONFIG_LIMIT
from gate._git import current_commit, git, repo_relative, toplevel
from gate.core.config import DEFAULT_CONFIG, GateConfig, parse_config
from gate.core.results import Results, RunResult
from gate.core.tasks import Task
from gate.errors import BadInput, Unmeasurable
from gate.execution.run import (
    ArmPlan,
    PlanFrom,
    RunRequest,
    Stage,
    arm_options,
    arm_prefix,
    ledger_path,
    open_stage,
    plan_arm,
    planned_items,
    replication_ranges,
    results_header,
    run_plan,
)
from gate.execution.runner import Arm
from gate.execution.session import ArmFile, SessionPlan, execute
from gate.execution.yardstick import archive
from gate.report import dollars, rate
from gate.upstream import Endpoint

if TYPE_CHECKING:
    from gate.compare import RunPlan
    from gate.execution.yardstick import Yardstick

BASE, PR = "base", "pr"

#: Why a PR that adds the gate cannot be judged at all (exit 3).
GATE_IS_NEW = (
    "{config} does not exist on the base branch {label}: this pull request adds the gate. "
    "Nothing on {label} can measure it yet (no tasks, no baseline, no agent to run a "
    "same-job A/B against), so it is not judged. Once it is merged, the refresh on a push to "
    "{label} writes the first baseline; until then every later PR is judged by a same-job "
    "A/B against its base commit's agent")


def base_output(output: Path) -> Path:
    """Where the base arm's results go: ``results.json`` → ``results.base.json``."""
    return output.with_name(f"{output.stem}.{BASE}{output.suffix or '.json'}")


def ab_plan(tasks: list[Task], replications: int | dict[str, tuple[int, int]], base: Arm,
            pr: Arm, first: int = 0) -> list[tuple[Task, int, Arm]]:
    """Every (task, replication) for both arms, replication-major, the two arms of each pair
    next to each other in ABBA order: base first on even pairs, the PR first on odd ones.
    ``replications``: the same count for every task from ``first``, or each task's planned
    range of replications (both arms run the same)."""
    ranges = (replications if isinstance(replications, dict)
              else {t.id: (first, first + replications) for t in tasks})
    out: list[tuple[Task, int, Arm]] = []
    for pair, (task, rep) in enumerate(planned_items(tasks, ranges)):
        order = (base, pr) if pair % 2 == 0 else (pr, base)
        out += [(task, rep, arm) for arm in order]
    return out


def config_rel(cfg: GateConfig, root: Path) -> str:
    """gate.toml's path in the repository, as the checkout names it."""
    source = cfg.source or (cfg.root / DEFAULT_CONFIG)
    parent = repo_relative(root, source.parent)
    return source.name if parent == "." else f"{parent}/{source.name}"


def gate_is_new(cfg: GateConfig, *, root: Path, ref: str) -> bool:
    """Whether ``ref`` has neither this checkout's gate.toml nor its task suite: the PR adds
    the gate, and nothing on the base can measure it."""
    if cfg.source is None:
        return False  # no gate.toml here either: the defaults on both sides
    rel = config_rel(cfg, root)
    tasks = repo_relative(root, cfg.path(cfg.suite.tasks))
    return all(git(root, "cat-file", "-e", f"{ref}:{p}").returncode != 0
               for p in (rel, tasks))


@contextlib.contextmanager
def base_arm_config(measuring: GateConfig, *, root: Path, ref: str,
                    label: str | None = None) -> Iterator[GateConfig]:
    """The base commit's agent configuration: ``[agent]`` of its gate.toml, the files it names
    resolved in its tree (extracted with ``git archive`` to a private directory that lives
    until the block ends); everything else ``measuring``'s (the base branch's yardstick)."""
    label = label or ref
    rel = config_rel(measuring, root)
    with tempfile.TemporaryDirectory(prefix="gate-ab-base-") as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        _extract_tree(root, ref, tree, label)
        path = tree / rel
        if path.is_file():
            if path.stat().st_size > CONFIG_LIMIT:
                raise BadInput(f"{rel} on {label}: larger than {CONFIG_LIMIT:,} bytes")
            base = parse_config(path.read_text(encoding="utf-8", errors="replace"),
                                where=f"{rel} on {label}", root=path.parent)
        elif gate_is_new(measuring, root=root, ref=ref):
            raise Unmeasurable(GATE_IS_NEW.format(config=rel, label=label))
        else:  # a suite without a gate.toml on the base: the defaults, as the yardstick reads
            base = GateConfig(root=path.parent)
        # the price table measures cost: the base branch's for both arms
        agent = base.agent.model_copy(update={"prices": measuring.agent.prices})
        yield GateConfig(agent=agent, suite=measuring.suite, gate=measuring.gate,
                         ci=measuring.ci, conditions=measuring.conditions, root=path.parent,
                         source=path)


def _extract_tree(root: Path, ref: str, dest: Path, label: str) -> None:
    failed = archive(root, ref, dest)
    if failed is not None:
        raise BadInput(f"{label}: cannot read the base commit's tree for a same-job A/B "
                       f"({failed})")


@dataclass
class ABRun:
    """The two arms of a same-job A/B, each a complete results file."""

    base: Results
    pr: Results
    base_path: Path
    pr_path: Path
    base_commit: str | None

    @property
    def runs_each(self) -> int:
        return max(len(self.base.runs), len(self.pr.runs))

    @property
    def cost_usd(self) -> float:
        """What both arms really cost (measured cost plus the suite overhead)."""
        return sum((r.summary.spend_usd if r.summary.spend_usd is not None
                    else r.summary.cost_usd) for r in (self.base, self.pr))


def _header(req: RunRequest, name: str, arm: ArmPlan, stage: Stage, *,
            commits: dict[str, str | None], outputs: dict[str, Path],
            ledger: Path, plan: RunPlan | None) -> Callable[[Endpoint | None], Results]:
    """The arm's results header, once the upstream is known (both arms record the plan)."""
    def make(upstream: Endpoint | None) -> Results:
        return results_header(
            req, arm, stage, upstream=upstream, ledger=ledger, commit=commits[name],
            schedule={"arm": name, **(plan.schedule(0) if plan is not None else {})},
            plan=plan.record(1) if plan is not None else None,
            extra={"ab": {"arm": name, "base_commit": commits[BASE], "pr_commit": commits[PR],
                          "order": "ABBA per task and replication",
                          "other_arm": str(outputs[PR if name == BASE else BASE].name)}})
    return make


def run_ab(req: RunRequest, base_cfg: GateConfig, *, base_commit: str | None,
           on_result: Callable[[RunResult], None] | None = None) -> ABRun:
    """Run the base commit's agent (``base_cfg``) and the PR's (``req.config``) on the suite
    of ``req`` (the base branch's), interleaved; write ``base_output(req.output)`` and
    ``req.output``. ``req.agent_kind`` and ``req.model`` override both arms alike."""
    if req.resume:
        raise BadInput("--resume: a same-job A/B is not journaled (its two arms are judged "
                       "only together); run it afresh")
    if req.max_cost is not None or req.shard is not None:
        raise BadInput("--max-cost and --shard do not apply to a same-job A/B (its two arms "
                       "are run and judged whole)")
    cfg = req.config
    configs = {BASE: base_cfg, PR: cfg}
    stage = open_stage(req, list(configs.values()))
    outputs = {BASE: base_output(req.output), PR: req.output}
    commits = {BASE: base_commit, PR: current_commit(cfg.root, req.commit)}
    arms = {name: plan_arm(req, arm_cfg, stage.prices,
                           arm_options(req, cfg, commit=commits[name], output=outputs[name],
                                       arm=name))
            for name, arm_cfg in configs.items()}
    # one plan for both arms (req.plan_from: the committed baseline, "independent"), one look
    plan = run_plan(req, stage)
    tasks = list(stage.suite.tasks)
    work = ab_plan(tasks, replication_ranges(req, stage, plan, tasks), arms[BASE].arm(BASE),
                   arms[PR].arm(PR))
    ledger = ledger_path(req)
    files = [ArmFile(name, outputs[name],
                     _header(req, name, arms[name], stage, commits=commits, outputs=outputs,
                             ledger=ledger, plan=plan),
                     "incomplete: the same-job A/B has not finished",
                     prefix=arm_prefix(req, arms[name], stage.suite.tasks))
             for name in (BASE, PR)]
    results = execute(SessionPlan(
        work=work, planned=work, files=files, provider=stage.provider, cancel=stage.cancel,
        prices=stage.prices, jobs=stage.jobs, server_tools=stage.server_tools,
        upstream=stage.upstream(req, ledger, any(a.spec.uses_model for a in arms.values())),
        request_observer=req.request_observer, on_result=on_result))
    return ABRun(base=results[BASE], pr=results[PR], base_path=outputs[BASE],
                 pr_path=outputs[PR], base_commit=base_commit)


def resolve_commit(root: Path, ref: str) -> str | None:
    r = git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return r.stdout.strip() or None if r.returncode == 0 else None


def run_local_ab(req: RunRequest, ref: str,
                 on_result: Callable[[RunResult], None] | None = None,
                 echo: Callable[[str], None] | None = None,
                 baseline_of: Callable[[Yardstick], Results | None] | None = None) -> ABRun:
    """``gate run --ab REF``: REF's yardstick (tasks, [suite], [gate]) for both arms, REF's
    agent against this checkout's, in one run; both arms planned from the yardstick's
    baseline (``baseline_of``: how it is read, gate.ci's ``base_baseline``) when it has one."""
    from gate.execution.yardstick import open_yardstick

    root = toplevel(req.config.root)
    with open_yardstick(req.config, root=root, ref=ref, tasks_override=req.tasks_dir) as ys:
        for line in ys.lines(markdown=False):
            if echo:
                echo(f"yardstick: {line}")
        # both arms planned from REF's committed baseline when it has one ("independent":
        # the A/B measures its base arm afresh), else every task the same runs
        baseline = baseline_of(ys) if baseline_of is not None else None
        joined = dataclasses.replace(req, config=ys.config, tasks_dir=ys.tasks_dir,
                                     plan_from=PlanFrom(baseline, "independent"))
        with base_arm_config(ys.config, root=root, ref=ref) as base_cfg:
            return run_ab(joined, base_cfg, base_commit=resolve_commit(root, ref),
                          on_result=on_result)


def describe(pair: ABRun, *, markdown: bool) -> str:
    """The line saying which mode judged and what it cost."""
    sha = (pair.base_commit or "the base")[:7]
    shown = f"`{sha}`" if markdown and pair.base_commit else sha
    return (f"Judged by a same-job A/B against {shown}'s agent ({pair.runs_each} runs each, "
            f"cost {dollars(pair.cost_usd)} total)")


__all__ = ["BASE", "PR", "ABRun", "ab_plan", "base_arm_config", "base_output",
           "describe", "gate_is_new", "run_ab", "run_local_ab"]


def run_ab_command(req: RunRequest, ref: str, base_ref: str | None,
                   on_result: Callable[[RunResult], None] | None,
                   baseline_of: Callable[[Yardstick], Results | None] | None = None) -> ABRun:
    """``gate run --ab REF``, with its output (the caller applies the infra rule to both
    arms: gate.ci's ``check_infra``)."""
    import click

    if base_ref and base_ref != ref:
        raise BadInput(f"--ab {ref} measures with {ref}'s tasks and settings: --base-ref "
                       f"{base_ref} names another yardstick")
    pair = run_local_ab(req, ref, on_result=on_result,
                        echo=lambda line: click.echo(line, err=True), baseline_of=baseline_of)
    for what, res, path in (("base", pair.base, pair.base_path), ("this checkout", pair.pr,
                                                                    pair.pr_path)):
        s = res.summary
        click.echo(f"{what} ({res.model}): {s.passed}/{s.total} passed ({rate(s.pass_rate)}), "
                   f"{s.errors} errors, cost {dollars(s.cost_usd)} → {path}")
    click.echo(f"{describe(pair, markdown=False)}; judge it with: gate compare "
               f"{pair.base_path} {pair.pr_path}")
    return pair
