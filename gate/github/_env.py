"""The GitHub Actions environment, read in exactly one place.

Every ``GITHUB_*`` variable and the token are read here and nowhere else: the plain facts a
command needs before anything heavy loads (:func:`in_actions`, :func:`event_name`, …) and
:func:`actions_environ`, the raw values ``CIEnvironment`` (``_environment``) types and
validates once. This module imports no pydantic: ``gate ci --config missing.toml`` says the
missing file before any model loads.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gate.upstream import credential_variables

#: what CIEnvironment is made of: its field → the variables read for it, first set wins
ACTIONS_VARIABLES: dict[str, tuple[str, ...]] = {
    "event_path": ("GITHUB_EVENT_PATH",),
    "event_name": ("GITHUB_EVENT_NAME",),
    "repository": ("GITHUB_REPOSITORY",),
    "api_url": ("GITHUB_API_URL",),
    "server_url": ("GITHUB_SERVER_URL",),
    "run_id": ("GITHUB_RUN_ID",),
    "run_attempt": ("GITHUB_RUN_ATTEMPT",),
    "sha": ("GITHUB_SHA",),
    "ref": ("GITHUB_REF",),
    "base_ref": ("GITHUB_BASE_REF",),
    "actor": ("GITHUB_ACTOR",),
    "step_summary": ("GITHUB_STEP_SUMMARY",),
    "output": ("GITHUB_OUTPUT",),
    "token": ("GATE_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"),
    # the credential of the model API the meter forwards to: any upstream's (gate/upstream)
    "model_credential": credential_variables(),
}


def actions_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The raw value of each of :data:`ACTIONS_VARIABLES` ("" when unset)."""
    return {field: next((v for name in names if (v := _get(name, environ))), "")
            for field, names in ACTIONS_VARIABLES.items()}


def _get(name: str, environ: Mapping[str, str] | None) -> str:
    return (os.environ if environ is None else environ).get(name, "").strip()


def in_actions(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs as a GitHub Actions step (``GITHUB_ACTIONS=true``)."""
    return _get("GITHUB_ACTIONS", environ) == "true"


def actions_sha(environ: Mapping[str, str] | None = None) -> str:
    """The commit the workflow runs on (``GITHUB_SHA``), "" outside Actions."""
    return _get("GITHUB_SHA", environ)


def event_name(environ: Mapping[str, str] | None = None) -> str:
    """The event that started the workflow (``GITHUB_EVENT_NAME``), "" outside Actions."""
    return _get("GITHUB_EVENT_NAME", environ)


def workspace(environ: Mapping[str, str] | None = None) -> Path | None:
    """The checkout as the runner made it (``GITHUB_WORKSPACE``), None outside Actions."""
    value = _get("GITHUB_WORKSPACE", environ)
    return Path(value) if value else None
