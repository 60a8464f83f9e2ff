from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import click

from gate.cli._options import progress, run_options, run_request
from gate.run import infra_gate, run_suite


@click.command()
@run_options
@click.option("--base-ref", metavar="REF", envvar="GATE_BASE_REF",
              help="Measure as a pull request into REF is measured: this checkout's [agent], "
                   "REF's tasks, [suite] and [gate] (read with git). Then `gate compare "
                   "--base-ref REF` judges exactly as CI does.")
def run(base_ref: str | None, **kw: Any) -> None:
    """Run the suite and write a results file (written as runs land, atomically).

    Exit 3 when more than [gate].max_infra_rate of the runs were infra errors.
    """
    req = run_request(kw)
    with contextlib.ExitStack() as stack:
        if base_ref:
            from gate.github._git import toplevel
            from gate.yardstick import open_yardstick

            ys = stack.enter_context(open_yardstick(
                req.config, root=toplevel(req.config.root), ref=base_ref,
                tasks_override=req.tasks_dir))
            for line in ys.lines(markdown=False):
                click.echo(f"yardstick: {line}", err=True)
            req = dataclasses.replace(req, config=ys.config, tasks_dir=ys.tasks_dir)
        results = run_suite(req, on_result=progress)
    s = results.summary
    rate = f"{s.pass_rate:.0%}" if s.pass_rate is not None else "n/a"
    hit = f"{s.cache_hit_rate:.2f}" if s.cache_hit_rate is not None else "n/a"
    turns = f"{s.mean_turns:.1f}" if s.mean_turns is not None else "n/a"
    click.echo(f"{results.model}: {s.passed}/{s.total} passed ({rate}), {s.errors} errors, "
               f"mean turns {turns}, cost ${s.cost_usd:.4f} (+ ${s.overhead_usd or 0:.4f} suite "
               f"overhead), cache hit {hit} → {req.output}")
    problems = (results.model_extra or {}).get("problems") or {}
    for name, reason in problems.items():  # names and reasons escaped by the loader
        click.echo(f"gate: warning: task {name} not run: {reason}", err=True)
    for name, keys in ((results.model_extra or {}).get("unhonoured") or {}).items():
        click.echo(f"gate: note: task {name}: task.toml keys the gate does not honour: "
                   f"{', '.join(keys)}", err=True)
    infra_gate(results, req.config.gate.max_infra_rate)
