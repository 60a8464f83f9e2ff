"""``gate ci``: the GitHub Actions entrypoint (``action.yml`` runs exactly this)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gate.config import load_config
from gate.github import CIOptions, CIOverrides, run_ci
from gate.github._ci import MODES
from gate.results import RunResult
from gate.run import RunRequest


def _progress(r: RunResult) -> None:
    mark = {"passed": "PASS", "failed": "FAIL", "error": "ERR "}[r.status]
    tail = f"  {r.reason}" if r.reason else ""
    click.echo(f"{mark} {r.task} #{r.replication} ({r.turns} turns, ${r.cost_usd:.4f}, "
               f"{r.duration_s:.1f}s){tail}", err=True)


@click.command()
# --- the same run options as `gate run`, from the same GATE_* variables -------------------
@click.option("--config", "config_path", type=click.Path(dir_okay=False), envvar="GATE_CONFIG",
              help="gate.toml to read (default: ./gate.toml if present).")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False), envvar="GATE_TASKS",
              help="Suite directory (default: [suite].tasks).")
@click.option("--task", "task_ids", multiple=True, help="Only this task id (repeatable).")
@click.option("--agent", "agent_kind", type=click.Choice(["builtin", "command", "oracle"]),
              envvar="GATE_AGENT", help="Agent kind (default: [agent].kind).")
@click.option("--model", envvar="GATE_MODEL", help="Model id (default: [agent].model).")
@click.option("--sim", is_flag=True, envvar="GATE_SIM",
              help="Run against the built-in simulator (no API key needed; labelled as such).")
@click.option("--seed", type=int, envvar="GATE_SEED", help="Simulator seed (default 0).")
@click.option("-k", "--replications", type=click.IntRange(min=1), envvar="GATE_REPLICATIONS",
              help="Runs per task (default: [suite].replications).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), envvar="GATE_JOBS",
              help="Runs at once (default: [suite].jobs).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="results.json",
              show_default=True, envvar="GATE_OUTPUT", help="Results file to write.")
@click.option("--keep-workspaces", is_flag=True, help="Keep each run's workspace for debugging.")
@click.option("--no-transcripts", is_flag=True, help="Do not save per-run transcripts.")
# --- what CI does with the verdict (each overrides [ci] in gate.toml) ----------------------
@click.option("--mode", type=click.Choice(MODES), default="auto", show_default=True,
              envvar="GATE_MODE",
              help="auto: from the event (pull_request → pr; push/dispatch on the default "
                   "branch → main, elsewhere → check; workflow_run → comment).")
@click.option("--comment/--no-comment", default=None, envvar="GATE_COMMENT",
              help="Create or update the one PR comment ([ci].comment, default on).")
@click.option("--fail/--no-fail", "fail_on_regression", default=None,
              envvar="GATE_FAIL_ON_REGRESSION",
              help="Exit 1 on a regression ([ci].fail_on_regression, default on). Exit 3 "
                   "(unmeasurable) stays: never a silent pass.")
@click.option("--accept-label", envvar="GATE_ACCEPT_LABEL",
              help="PR label that accepts a regression: reported, not blocking "
                   "([ci].accept_label, default gate:accept-regression).")
@click.option("--baseline-refresh", type=click.Choice(["commit", "artifact"]),
              envvar="GATE_BASELINE_REFRESH",
              help="On main: push the pooled baseline.json back, or leave it for an upload "
                   "([ci].baseline_refresh, default artifact).")
@click.option("--history", envvar="GATE_HISTORY",
              help="Main's run history, JSONL ([ci].history, default gate-history.jsonl).")
@click.option("--fork-without-key", type=click.Choice(["fail", "skip"]),
              envvar="GATE_FORK_WITHOUT_KEY",
              help="A fork PR gets no secrets: exit 3, or skip with exit 0 "
                   "([ci].fork_without_key, default fail).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False),
              default="gate-report.md", show_default=True, envvar="GATE_REPORT",
              help="Markdown report to write (pr/check), or to post (comment mode).")
def ci(
    config_path: str | None, tasks_dir: str | None, task_ids: tuple[str, ...],
    agent_kind: str | None, model: str | None, sim: bool, seed: int | None,
    replications: int | None, jobs: int | None, output: str, keep_workspaces: bool,
    no_transcripts: bool, mode: str, comment: bool | None, fail_on_regression: bool | None,
    accept_label: str | None, baseline_refresh: str | None, history: str | None,
    fork_without_key: str | None, report_path: str,
) -> None:
    """The GitHub Actions entrypoint: run, judge against the base branch, comment, exit.

    \b
    pull_request  baseline from the base branch, one sticky comment, exit by verdict
    push to main  pool the run into baseline.json, append the history, commit or keep
    fork PRs      no secrets: exit 3 (or skip, --fork-without-key skip)

    Reads GITHUB_* and the token (GITHUB_TOKEN) from the environment; secrets are masked.
    Exit: 0 pass · 1 regression · 2 bad input · 3 unmeasurable.
    """
    req = RunRequest(
        config=load_config(config_path), output=Path(output),
        tasks_dir=Path(tasks_dir) if tasks_dir else None, task_ids=list(task_ids),
        agent_kind=agent_kind, replications=replications, jobs=jobs,
        keep_workspaces=keep_workspaces, transcripts=not no_transcripts,
        sim=sim, model=model, seed=seed,
    )
    opts = CIOptions(
        run=req, mode=mode, report_path=Path(report_path), on_result=_progress,
        overrides=CIOverrides(
            comment=comment, fail_on_regression=fail_on_regression, accept_label=accept_label,
            baseline_refresh=baseline_refresh, history=history,
            fork_without_key=fork_without_key,
        ),
        log=lambda line: click.echo(line, err=True),
    )
    sys.exit(run_ci(opts))
