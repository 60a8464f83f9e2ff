"""Commands load on first use: ``gate --help`` lists them without importing their modules."""

from __future__ import annotations

import subprocess
import sys

import click

from gate.cli import COMMANDS, load_command, main


def test_the_listed_help_is_each_commands_own() -> None:
    for name, (_, _, listed) in COMMANDS.items():
        command = load_command(name)
        assert command.name == name or name in {"baseline", "compare"}
        assert command.get_short_help_str(limit=1000) == listed, name


def test_every_command_is_reachable_and_unknown_ones_are_refused() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    assert main.get_command(ctx, "nope") is None
    for name in COMMANDS:
        assert isinstance(main.get_command(ctx, name), click.Command)


def test_help_and_a_bad_flag_import_no_heavy_module() -> None:
    probe = ("import sys\nfrom gate.cli import main\n"
             "for argv in (['--help'], ['--no-such-flag']):\n"
             "    try:\n        main(argv, prog_name='gate')\n"
             "    except SystemExit:\n        pass\n"
             "heavy = sorted(m for m in ('scipy', 'numpy', 'anthropic', 'docker', 'jinja2',"
             " 'gate.execution.run', 'gate.compare') if m in sys.modules)\n"
             "print('HEAVY', heavy)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60)
    assert "Commands:" in p.stdout
    assert "validate  Check each task is sound: verify FAILS" in p.stdout
    assert "HEAVY []" in p.stdout, p.stdout + p.stderr
