"""Options shared by every command that runs the suite (`gate run`, `gate ci`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from gate.agents import agent_kind_names
from gate.config import load_config
from gate.results import RunResult
from gate.run import RunRequest

F = TypeVar("F", bound=Callable[..., Any])

_RUN_OPTIONS = [
    click.option("--config", "config_path", type=click.Path(dir_okay=False),
                 envvar="GATE_CONFIG", help="gate.toml to read (default: ./gate.toml if present)."),
    click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False), envvar="GATE_TASKS",
                 help="Suite directory (default: [suite].tasks)."),
    click.option("--task", "task_ids", multiple=True, help="Only this task id (repeatable)."),
    click.option("--agent", "agent_kind", type=click.Choice(agent_kind_names()),
                 envvar="GATE_AGENT", help="Agent kind (default: [agent].kind)."),
    click.option("--model", envvar="GATE_MODEL", help="Model id (default: [agent].model)."),
    click.option("--sim", is_flag=True, envvar="GATE_SIM",
                 help="Run against the built-in simulator (no API key needed; labelled as "
                      "such)."),
    click.option("--seed", type=int, envvar="GATE_SEED", help="Simulator seed (default 0)."),
    click.option("-k", "--replications", type=click.IntRange(min=1),
                 envvar="GATE_REPLICATIONS", help="Runs per task (default: [suite].replications)."),
    click.option("-j", "--jobs", type=click.IntRange(min=1), envvar="GATE_JOBS",
                 help="Runs at once (default: [suite].jobs)."),
    click.option("-o", "--output", type=click.Path(dir_okay=False), default="results.json",
                 show_default=True, envvar="GATE_OUTPUT", help="Results file to write."),
    click.option("--keep-workspaces", is_flag=True,
                 help="Keep each run's workspace for debugging."),
    click.option("--no-transcripts", is_flag=True, help="Do not save per-run transcripts."),
]
RUN_OPTION_NAMES = ("config_path", "tasks_dir", "task_ids", "agent_kind", "model", "sim", "seed",
                    "replications", "jobs", "output", "keep_workspaces", "no_transcripts")


def run_options(f: F) -> F:
    """Decorate a command with the run options, in the order `--help` shows them."""
    for option in reversed(_RUN_OPTIONS):
        f = option(f)
    return f


def run_request(kw: dict[str, Any]) -> RunRequest:
    """Build the run from the run options, popping them out of ``kw``."""
    o = {name: kw.pop(name) for name in RUN_OPTION_NAMES}
    return RunRequest(
        config=load_config(o["config_path"]), output=Path(o["output"]),
        tasks_dir=Path(o["tasks_dir"]) if o["tasks_dir"] else None,
        task_ids=list(o["task_ids"]), agent_kind=o["agent_kind"],
        replications=o["replications"], jobs=o["jobs"],
        keep_workspaces=o["keep_workspaces"], transcripts=not o["no_transcripts"],
        sim=o["sim"], model=o["model"], seed=o["seed"],
    )


def progress(r: RunResult) -> None:
    """One line per landed run, on stderr."""
    mark = {"passed": "PASS", "failed": "FAIL", "error": "ERR "}[r.status]
    tail = f"  {r.reason}" if r.reason else ""
    arm = f" [{r.arm}]" if r.arm else ""  # a same-job A/B's arm
    click.echo(f"{mark} {r.task} #{r.replication}{arm} ({r.turns} turns, ${r.cost_usd:.4f}, "
               f"{r.duration_s:.1f}s){tail}", err=True)
