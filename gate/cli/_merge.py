from __future__ import annotations

from pathlib import Path

import click

from gate.core.results import load_results, write_results
from gate.execution.shards import carry_transcripts, merge


@click.command("merge")
@click.argument("output", type=click.Path(dir_okay=False))
@click.argument("shards", nargs=-1, required=True, type=click.Path(dir_okay=False))
def merge_cmd(output: str, shards: tuple[str, ...]) -> None:
    """Join the results of `gate run --shard I/N` (all N of them) into OUTPUT.

    Refuses (exit 2) shards that differ in anything but their shard index (suite, agent
    fingerprint, model, seed, replications, schedule, conditions), the same shard twice,
    overlapping tasks and missing shards.

    Each shard's transcripts (its `X.transcripts/` directory) are copied beside OUTPUT, so the
    merged runs keep their traces; a shard without them merges all the same. A transcript that
    is a symlink, not a regular file or too large is skipped with a warning (exit code
    unchanged): it is never followed or read.
    """
    parts = [(Path(p), load_results(p)) for p in shards]
    merged, carried, warnings = carry_transcripts(parts, merge(parts), Path(output))
    write_results(output, merged)
    for line in warnings:
        click.echo(f"gate: warning: {line}", err=True)
    s = merged.summary
    click.echo(f"merged {len(parts)} shards: {len(merged.runs)} runs over "
               f"{len({r.task for r in merged.runs})} tasks, {s.passed}/{s.total} passed → "
               f"{output} ({carried} transcript{'' if carried == 1 else 's'} carried)")
    if note := merged.interruption_note():
        click.echo(f"gate: warning: the merged {note}", err=True)
