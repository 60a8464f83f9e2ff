"""``python -m gate``: the credential re-exec (gate.secrets) comes first, before the CLI and its
commands load, so a process holding a credential re-executes having imported next to nothing."""

import sys

from gate.secrets import reexec_without_secrets

reexec_without_secrets(sys.argv[1:])

from gate.cli import entry  # noqa: E402

entry()
