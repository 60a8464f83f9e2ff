"""``gate validate``'s output. Every message is text, never markup: a task's reason quotes
files, paths and builder output (``[suite].pull``, ``[/tmp/out]``), which Rich would otherwise
read as style tags, dropping them or failing on a closing tag it never opened. A reason of
several lines (a builder's own error lines) keeps its first line in the table and prints the
rest under it, indented."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from gate.cli._output import console, table
from gate.compare import TaskHealth, suite_health
from gate.core.config import load_config
from gate.core.results import load_results
from gate.core.tasks import load_suite
from gate.errors import BadInput
from gate.execution.runner import RunOptions
from gate.execution.validate import TaskCheck, validate_suite
from gate.report import HEALTH_LEAD, count
from gate.sandbox import suite_sandboxes


def _result(check: TaskCheck) -> str:
    if not check.sound:
        return f"BROKEN: {(check.problem or '').splitlines()[0] if check.problem else ''}"
    return f"ok ({check.note})" if check.note else "ok"


def print_checks(checks: list[TaskCheck]) -> None:
    """The table (cells escaped: text, not markup), then the further lines of long reasons."""
    rows = [[escape(c.task), c.untouched, c.oracle, escape(_result(c))] for c in checks]
    console().print(table(["task", "verify untouched", "verify after oracle", "result"], rows))
    for c in checks:
        more = (c.problem or "").splitlines()[1:]
        if more:
            click.echo(f"{c.task}:")
            for line in more:
                click.echo(f"    {line}")


def _health(path: str, named: bool, tasks: set[str]) -> list[TaskHealth]:
    """The suite health of the baseline at ``path`` (gate/compare/_health.py), for the tasks
    validated; none without a baseline, unless one was named (then a missing file is bad
    input)."""
    if not named and not Path(path).exists():
        return []
    return [h for h in suite_health(load_results(path, "baseline")) if h.task in tasks]


@click.command()
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml to read (default: ./gate.toml if present).")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False), envvar="GATE_TASKS",
              help="Suite directory (default: [suite].tasks, i.e. tasks/).")
@click.option("--task", "task_ids", multiple=True, help="Only this task id (repeatable).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False),
              help="Baseline whose suite health to name (default: [gate] baseline, when it "
                   "exists).")
def validate(config_path: str | None, tasks_dir: str | None, task_ids: tuple[str, ...],
             baseline_path: str | None) -> None:
    """Check each task is sound: verify FAILS untouched and PASSES after the oracle.

    A task without solution/solve.sh is checked for failing untouched only, and says so.
    With a baseline, its tasks that always fail or disagree with their own history are
    named, with why (suite health: advice, never a broken task).
    Exit 1 if any task is broken, 0 if all are sound, 2 if the suite has no task at all.
    """
    from gate.github import in_actions

    cfg = load_config(config_path)
    root = Path(tasks_dir) if tasks_dir else cfg.path(cfg.suite.tasks)
    suite = load_suite(root, task_ids or None)
    if not suite.tasks and not suite.problems:  # "0 sound, 0 broken" would read as a pass
        raise BadInput(f"{root}: no task found to validate (a task is a directory with "
                       "task.md and verify.sh, or a Harbor task with instruction.md)")
    health = _health(baseline_path or str(cfg.path(cfg.gate.baseline)), bool(baseline_path),
                     {t.id for t in suite.tasks})
    opts = RunOptions(verify_timeout=cfg.suite.verify_timeout, task_timeout=cfg.suite.task_timeout)
    with suite_sandboxes(cfg.suite, registry=in_actions()) as provider:
        checks = validate_suite(suite, provider=provider, options=opts)
    print_checks(checks)
    for check in checks:  # a skill not honoured, a SKILL.md outside the skill folders
        for line in check.skill_notes:
            click.echo(f"note: {check.task}: {line}")
    for task in suite.tasks:
        if keys := task.unhonoured:  # left out: keys empty or at Harbor's default
            click.echo(f"note: {task.id}: task.toml keys the gate does not honour: "
                       f"{', '.join(keys)}")
    broken = [c for c in checks if not c.sound]
    unproven = sum(1 for c in checks if c.sound and c.oracle == "missing")
    tail = f" ({unproven} without an oracle)" if unproven else ""
    if health:
        click.echo(HEALTH_LEAD)
        for h in health:
            click.echo(f"  - {h.line}")
    look = f"; {count(len(health), 'task')} to look at (suite health)" if health else ""
    click.echo(f"{len(checks) - len(broken)} sound{tail}, {len(broken)} broken{look}")
    sys.exit(1 if broken else 0)
