from __future__ import annotations

import sys
from pathlib import Path

import click

from gate.cli._output import console, table
from gate.config import load_config
from gate.errors import BadInput
from gate.runner import RunOptions
from gate.sandbox import suite_sandboxes
from gate.tasks import load_suite
from gate.validate import validate_suite


@click.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml to read (default: ./gate.toml if present).")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False), envvar="GATE_TASKS",
              help="Suite directory (default: [suite].tasks, i.e. tasks/).")
@click.option("--task", "task_ids", multiple=True, help="Only this task id (repeatable).")
def validate(config_path: str | None, tasks_dir: str | None, task_ids: tuple[str, ...]) -> None:
    """Check each task is sound: verify FAILS untouched and PASSES after the oracle.

    Exit 1 if any task is broken, 0 if all are sound, 2 if the suite has no task at all.
    """
    from gate.github import in_actions

    cfg = load_config(config_path)
    root = Path(tasks_dir) if tasks_dir else cfg.path(cfg.suite.tasks)
    suite = load_suite(root, task_ids or None)
    if not suite.tasks and not suite.problems:  # "0 sound, 0 broken" would read as a pass
        raise BadInput(f"{root}: no task found to validate (a task is a directory with "
                       "task.md and verify.sh, or a Harbor task with instruction.md)")
    opts = RunOptions(verify_timeout=cfg.suite.verify_timeout, task_timeout=cfg.suite.task_timeout)
    with suite_sandboxes(cfg.suite, registry=in_actions()) as provider:
        checks = validate_suite(suite, provider=provider, options=opts)
    rows = [[c.task, c.untouched, c.oracle, "ok" if c.sound else f"BROKEN: {c.problem}"]
            for c in checks]
    console().print(table(["task", "verify untouched", "verify after oracle", "result"], rows))
    for task in suite.tasks:
        if task.unhonoured:
            click.echo(f"note: {task.id}: task.toml keys the gate does not honour: "
                       f"{', '.join(task.unhonoured)}")
    broken = [c for c in checks if not c.sound]
    click.echo(f"{len(checks) - len(broken)} sound, {len(broken)} broken")
    sys.exit(1 if broken else 0)
