"""``gate init``: a thin shell over :func:`gate.setup.init.init_repository`."""

from __future__ import annotations

from pathlib import Path

import click

from gate.setup.init import DEFAULT_ACTION, init_repository
from gate.upstream import upstream_names


@click.command("init")
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--branch", metavar="NAME",
              help="Branch the baseline refresh runs on (default: origin's default branch, "
                   "else the current one, else main).")
@click.option("--action", metavar="OWNER/REPO@REF",
              help="What the workflows' `uses:` names: where you keep this action, at a "
                   "commit SHA (a tag or branch moves: warned). Default: the commit this gate "
                   "was installed from "
                   f"(pip install \"git+https://github.com/OWNER/REPO@REF\"), else the "
                   f"placeholder {DEFAULT_ACTION} to replace.")
@click.option("--upstream", type=click.Choice(upstream_names()), default="anthropic",
              show_default=True,
              help="The model API the suite runs on: gate.toml's [agent] upstream, and how the "
                   "workflows give the gate its credential (a repository secret, or an OIDC "
                   "exchange with id-token: write on the measuring jobs only; "
                   "docs/upstreams.md, docs/github.md).")
def init_cmd(directory: Path, branch: str | None, action: str | None, upstream: str) -> None:
    """Adopt the gate in an existing repository: a commented gate.toml, one example task and
    the PR + main workflows.

    Also the agent's system prompt (agent/system.md), .github/dependabot.yml keeping the
    workflows' SHA-pinned actions current, and the results' .gitignore lines. Never overwrites
    a file: exit 2 naming the first that exists (an existing .gitignore gets the lines
    appended, an existing dependabot.yml is kept)."""
    result = init_repository(directory, branch=branch, action=action, upstream=upstream)
    for path in result.written:
        click.echo(f"wrote {path.relative_to(result.root)}")
    for path in result.appended:
        click.echo(f"appended to {path.relative_to(result.root)}")
    for path in result.kept:
        click.echo(f"kept {path.relative_to(result.root)} (exists)")
    click.echo("")
    click.echo(result.next_steps(), nl=False)
    for line in result.warnings:
        click.echo(f"gate: warning: {line}", err=True)
