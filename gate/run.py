"""``gate run``: the suite against the agent configuration, results written as they land."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gate._git import current_commit
from gate.agents import Agent, OracleAgent
from gate.config import GateConfig
from gate.errors import BadInput
from gate.results import AgentInfo, Results, RunResult, SuiteInfo, TaskInfo, new_results, write_results
from gate.runner import RunOptions, plan, run_many
from gate.sandbox import LocalSandboxProvider
from gate.tasks import Suite, load_suite


@dataclass
class RunRequest:
    config: GateConfig
    output: Path = Path("results.json")
    tasks_dir: Path | None = None
    task_ids: list[str] = field(default_factory=list)
    agent_kind: str | None = None
    replications: int | None = None
    jobs: int | None = None
    keep_workspaces: bool = False
    transcripts: bool = True


def suite_info(suite: Suite) -> SuiteInfo:
    return SuiteInfo(
        digest=suite.digest,
        tasks={t.id: TaskInfo(digest=t.digest, difficulty=t.difficulty) for t in suite.tasks},
    )


def make_agent(kind: str) -> Agent:
    if kind == "oracle":
        return OracleAgent()
    raise BadInput(f"agent kind {kind!r} is not available")


def run_suite(req: RunRequest, on_result: Callable[[RunResult], None] | None = None) -> Results:
    cfg = req.config
    tasks_dir = req.tasks_dir or cfg.path(cfg.suite.tasks)
    suite = load_suite(tasks_dir, req.task_ids or None)
    if not suite.tasks:
        raise BadInput(f"{tasks_dir}: no loadable task"
                       + (f" ({suite.problems[0].name}: {suite.problems[0].reason})"
                          if suite.problems else ""))
    kind = req.agent_kind or cfg.agent.kind
    agent = make_agent(kind)
    replications = req.replications or cfg.suite.replications
    jobs = req.jobs or cfg.suite.jobs
    transcripts_dir = req.output.with_name(req.output.stem + ".transcripts") \
        if req.transcripts else None
    commit = current_commit(cfg.root)
    options = RunOptions(
        verify_timeout=cfg.suite.verify_timeout,
        task_timeout=cfg.suite.task_timeout,
        max_turns=cfg.agent.max_turns,
        commit=commit,
        transcripts_dir=transcripts_dir,
    )
    results = new_results(
        model=agent.model_label(),
        agent=AgentInfo(kind=kind, fingerprint=f"{kind}:oracle"),
        suite=suite_info(suite),
        commit=commit,
        replications=replications,
        problems={p.name: p.reason for p in suite.problems},
    )
    write_results(req.output, results)  # an empty, valid file from the start

    def land(res: RunResult) -> None:
        results.runs.append(res)
        results.runs.sort(key=lambda r: (r.task, r.replication))
        write_results(req.output, results)
        if on_result:
            on_result(res)

    run_many(
        plan(suite.tasks, replications), agent, jobs=jobs,
        provider=LocalSandboxProvider(keep=req.keep_workspaces),
        options=options, on_result=land,
    )
    write_results(req.output, results)
    return results
