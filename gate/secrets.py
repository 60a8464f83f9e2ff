"""Keeping credentials away from everything the gate starts or writes.

Two tools: ``scrubbed_env`` builds the environment for task scripts and agent processes
(no credential of any kind), and ``Redactor`` masks known secret values in text that is
about to be stored (transcripts, logs, comments).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Names that carry credentials, or that point a process at one.
_SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|CERT)", re.IGNORECASE
)
_SECRET_PREFIXES = (
    "ANTHROPIC_", "GITHUB_", "GH_", "ACTIONS_", "AWS_", "AZURE_", "GOOGLE_", "GCP_",
    "OPENAI_", "INPUT_", "GATE_",
)
# Well-known secret variables, named for readers of this file; the rules above cover them.
KNOWN_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")


def is_secret_name(name: str) -> bool:
    return name.upper().startswith(_SECRET_PREFIXES) or bool(_SECRET_NAME.search(name))


def secret_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of the secret-looking variables of ``environ`` (long enough to be worth masking)."""
    env = os.environ if environ is None else environ
    return [v for k, v in env.items() if is_secret_name(k) and len(v) >= 8]


def scrubbed_env(
    extra: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The gate's environment minus every credential-looking variable, plus ``extra``.

    A variable is dropped when its name looks secret, or when its value equals a secret's
    value (a copy of the key under an innocent name).
    """
    env = dict(os.environ if environ is None else environ)
    secrets = set(secret_values(env))
    clean = {k: v for k, v in env.items() if not is_secret_name(k) and v not in secrets}
    clean.update(extra or {})
    return clean


class Redactor:
    """Replaces known secret values with ``[REDACTED]``."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        vals = sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in vals)) if vals else None

    @classmethod
    def from_environ(cls, extra: Iterable[str] = ()) -> Redactor:
        return cls([*secret_values(), *extra])

    def __call__(self, text: str) -> str:
        return self._pattern.sub("[REDACTED]", text) if self._pattern else text

    def __repr__(self) -> str:  # never show the values
        return "Redactor(<hidden>)"
