"""The ``gate`` command line: thin click shells over one library call per command."""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

import click

from gate._children import track as track_children
from gate.errors import GateError
from gate.secrets import become_subreaper, hide_secrets_from_environ

#: Commands load on first use (their modules import the statistics, the SDK, the docker
#: client ...), so ``gate --help`` and a bad flag cost a fraction of a second. Each entry:
#: name -> (module, attribute, the short help ``gate --help`` lists without importing it;
#: tests/e2e/test_cli_lazy.py keeps it equal to the command's own).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "baseline": ("gate.cli._compare", "baseline_cmd", "Promote RESULTS into the baseline."),
    "ci": ("gate.cli._ci", "ci",
           "The GitHub Actions entrypoint: run, judge against the base branch, comment, exit."),
    "compare": ("gate.cli._compare", "compare_cmd",
                "Compare RESULTS with BASELINE and give the verdict."),
    "init": ("gate.cli._init", "init_cmd",
             "Adopt the gate in an existing repository: a commented gate.toml, one example task "
             "and the PR + main workflows."),
    "merge": ("gate.cli._merge", "merge_cmd",
              "Join the results of `gate run --shard I/N` (all N of them) into OUTPUT."),
    "report": ("gate.cli._report", "report",
               "Write RESULTS as one self-contained HTML report, against a baseline when given."),
    "run": ("gate.cli._run", "run",
            "Run the suite and write a results file (each run journaled as it lands; the file "
            "is written from the journal at the end, and marked incomplete until then)."),
    "sim": ("gate.cli._sim", "sim",
            "The simulator: a local Messages API with a simulated model (no network, no key)."),
    "validate": ("gate.cli._validate", "validate",
                 "Check each task is sound: verify FAILS untouched and PASSES after the oracle."),
}


def load_command(name: str) -> click.Command:
    module, attr, _ = COMMANDS[name]
    command = getattr(importlib.import_module(module), attr)
    assert isinstance(command, click.Command)
    return command


class _GateGroup(click.Group):
    """Turns a ``GateError`` into one line on stderr and its exit code, never a traceback;
    loads a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(n) for n in names)  # as click lists commands
        rows = [(n, click.Command(n, help=COMMANDS[n][2]).get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GateError as exc:
            click.echo(f"gate: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("gate: interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # a bug of ours: never exit 1, which would mean "regression"
            if os.environ.get("GATE_DEBUG"):
                raise
            click.echo(f"gate: internal error: {type(exc).__name__}: {exc} "
                       "(set GATE_DEBUG=1 for the traceback; please report it)", err=True)
            sys.exit(3)


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``, as click's version_option prints it, reading the version only then."""
    if not value or ctx.resilient_parsing:
        return
    from gate import __version__

    click.echo(f"gate, version {__version__}")
    ctx.exit()


@click.group(cls=_GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and exit.")
def main() -> None:
    """agent-gate: a CI regression gate for LLM agents.

    Run a suite of verifiable tasks against the agent configuration in this commit, compare
    with the committed baseline, and block only real regressions.
    """


def entry() -> None:
    """The console script: credentials out of the process's visible environment, then the CLI."""
    hide_secrets_from_environ(sys.argv[1:])
    track_children()  # before anything is spawned: the gate's own children, told from orphans
    become_subreaper()  # orphans of runs come back to the gate, which kills them (gate.sandbox)
    # CI cancels a job with SIGTERM: stop the way Ctrl-C does, so runs are killed, not orphaned
    signal.signal(signal.SIGTERM, _terminate)
    main(prog_name="gate")  # the same name in usage lines after a re-exec (`python -m gate`)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
