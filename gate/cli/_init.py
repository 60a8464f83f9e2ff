"""``gate init``: a thin shell over :func:`gate.init.init_repository`."""

from __future__ import annotations

from pathlib import Path

import click

from gate.init import init_repository


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--branch", metavar="NAME",
              help="Branch the baseline refresh runs on (default: origin's default branch, "
                   "else the current one, else main).")
def init_cmd(directory: Path, branch: str | None) -> None:
    """Adopt the gate in an existing repository: a commented gate.toml, one example task and
    the PR + main workflows. Never overwrites a file: exit 2 naming the first that exists."""
    result = init_repository(directory, branch=branch)
    for path in result.written:
        click.echo(f"wrote {path.relative_to(result.root)}")
    click.echo("")
    click.echo(result.next_steps(), nl=False)
