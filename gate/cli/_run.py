from __future__ import annotations

from pathlib import Path

import click

from gate.config import load_config
from gate.results import RunResult
from gate.run import RunRequest, infra_gate, run_suite


@click.command()
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
def run(
    config_path: str | None, tasks_dir: str | None, task_ids: tuple[str, ...],
    agent_kind: str | None, model: str | None, sim: bool, seed: int | None,
    replications: int | None, jobs: int | None, output: str,
    keep_workspaces: bool, no_transcripts: bool,
) -> None:
    """Run the suite and write a results file (written as runs land, atomically)."""
    req = RunRequest(
        config=load_config(config_path), output=Path(output),
        tasks_dir=Path(tasks_dir) if tasks_dir else None, task_ids=list(task_ids),
        agent_kind=agent_kind, replications=replications, jobs=jobs,
        keep_workspaces=keep_workspaces, transcripts=not no_transcripts,
        sim=sim, model=model, seed=seed,
    )

    def progress(r: RunResult) -> None:
        mark = {"passed": "PASS", "failed": "FAIL", "error": "ERR "}[r.status]
        tail = f"  {r.reason}" if r.reason else ""
        click.echo(f"{mark} {r.task} #{r.replication} ({r.turns} turns, ${r.cost_usd:.4f}, "
                   f"{r.duration_s:.1f}s){tail}", err=True)

    results = run_suite(req, on_result=progress)
    s = results.summary
    rate = f"{s.pass_rate:.0%}" if s.pass_rate is not None else "n/a"
    hit = f"{s.cache_hit_rate:.2f}" if s.cache_hit_rate is not None else "n/a"
    click.echo(f"{results.model}: {s.passed}/{s.total} passed ({rate}), {s.errors} errors, "
               f"mean turns {f'{s.mean_turns:.1f}' if s.mean_turns is not None else 'n/a'}, "
               f"cost ${s.cost_usd:.4f}, cache hit {hit} → {output}")
    infra_gate(results, req.config.gate.max_infra_rate)
