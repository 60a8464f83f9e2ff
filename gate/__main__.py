"""``python -m gate``: the credentials leave the process's visible environment (gate.secrets)
first, before the CLI and its commands load; where that takes a re-exec, the process
re-executes having imported next to nothing."""

import sys

from gate.secrets import hide_secrets_from_environ

hide_secrets_from_environ(sys.argv[1:])

from gate.cli import entry  # noqa: E402

entry()
