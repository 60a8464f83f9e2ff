"""Options shared by every command that runs the suite (`gate run`, `gate ci`).

Imports nothing heavy at module level (the agents, the runner, rich): a command that fails on
its config, or shows its help, never pays for them (tests/e2e/test_cli_fast_start.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from gate.cli._progress import Progress
    from gate.core.config import GateConfig
    from gate.execution.run import RunRequest

F = TypeVar("F", bound=Callable[..., Any])


class LazyChoice(click.Choice):
    """A ``click.Choice`` whose values are loaded on first use (a flag's value, ``--help``),
    not when the command's module is imported."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = load
        self._loaded: Sequence[str] | None = None
        super().__init__([])

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        if self._loaded is None:
            self._loaded = tuple(self._load())
        return self._loaded

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:  # click.Choice.__init__ sets it
        pass


def _agent_kinds() -> list[str]:
    from gate.agents import agent_kind_names

    return agent_kind_names()

_RUN_OPTIONS = [
    click.option("--config", "config_path", type=click.Path(dir_okay=False),
                 envvar="GATE_CONFIG", help="gate.toml to read (default: ./gate.toml if present)."),
    click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False), envvar="GATE_TASKS",
                 help="Suite directory (default: [suite].tasks)."),
    click.option("--task", "task_ids", multiple=True, help="Only this task id (repeatable)."),
    click.option("--agent", "agent_kind", type=LazyChoice(_agent_kinds),
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
    click.option("--skip-broken", is_flag=True, envvar="GATE_SKIP_BROKEN",
                 help="Run the tasks that load and record the broken ones (a comparison lists "
                      "them as broken). Without it a task that cannot load (no verify.sh, a "
                      "bad task.toml) is exit 2 naming it. A PR's `gate ci` (and `--base-ref`) "
                      "always runs the rest: its tasks are the base branch's."),
]
RUN_OPTION_NAMES = ("config_path", "tasks_dir", "task_ids", "agent_kind", "model", "sim", "seed",
                    "replications", "jobs", "output", "keep_workspaces", "no_transcripts",
                    "skip_broken")


def run_options(f: F) -> F:
    """Decorate a command with the run options, in the order `--help` shows them."""
    for option in reversed(_RUN_OPTIONS):
        f = option(f)
    return f


def command_config(path: str | None) -> GateConfig:
    """The config of a command. A named file that is not there (the commonest config error)
    is said before the configuration's models (pydantic) load, in the words ``load_config``
    would use."""
    if path is not None and not os.path.lexists(path):
        from gate.errors import BadInput

        raise BadInput(f"{path}: config file not found")
    from gate.core.config import load_config

    return load_config(path)


def run_request(kw: dict[str, Any]) -> RunRequest:
    """Build the run from the run options, popping them out of ``kw``."""
    o = {name: kw.pop(name) for name in RUN_OPTION_NAMES}
    config = command_config(o["config_path"])  # a config error stops here, before the runner
    from gate.execution.run import RunRequest
    from gate.github import actions_sha, in_actions

    return RunRequest(
        config=config, output=Path(o["output"]),
        tasks_dir=Path(o["tasks_dir"]) if o["tasks_dir"] else None,
        task_ids=list(o["task_ids"]), agent_kind=o["agent_kind"],
        replications=o["replications"], jobs=o["jobs"],
        keep_workspaces=o["keep_workspaces"], transcripts=not o["no_transcripts"],
        sim=o["sim"], model=o["model"], seed=o["seed"],
        registry=in_actions(), commit=actions_sha() or None, skip_broken=o["skip_broken"],
    )


def progress() -> Progress:
    """The run's progress on stderr: live on a terminal, plain lines (and GitHub log groups)
    in CI, a summary table at the end (gate/cli/_progress.py)."""
    from gate.cli._progress import Progress

    return Progress()
