"""The ``gate`` command line: thin click shells over one library call per command."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import click

from gate import __version__
from gate.errors import GateError
from gate.secrets import reexec_without_secrets


class _GateGroup(click.Group):
    """Turns a ``GateError`` into one line on stderr and its exit code, never a traceback."""

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


@click.group(cls=_GateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gate")
def main() -> None:
    """agent-gate: a CI regression gate for LLM agents.

    Run a suite of verifiable tasks against the agent configuration in this commit, compare
    with the committed baseline, and block only real regressions.
    """


from gate.cli import _ci, _run, _validate  # noqa: E402  (commands register on import)

main.add_command(_run.run)
main.add_command(_validate.validate)
main.add_command(_ci.ci)

from gate.cli import _sim  # noqa: E402

main.add_command(_sim.sim)

from gate.cli import _compare  # noqa: E402

main.add_command(_compare.compare_cmd)
main.add_command(_compare.baseline_cmd)

from gate.cli import _merge  # noqa: E402

main.add_command(_merge.merge_cmd)


def entry() -> None:
    """The console script: credentials out of the process's visible environment, then the CLI."""
    reexec_without_secrets(sys.argv[1:])
    # CI cancels a job with SIGTERM: stop the way Ctrl-C does, so runs are killed, not orphaned
    signal.signal(signal.SIGTERM, _terminate)
    main(prog_name="gate")  # the same name in usage lines after the re-exec (`python -m gate`)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
