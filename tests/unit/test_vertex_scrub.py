"""The scrub withholds Google credentials from agents and tasks (the key file's variable, gcloud's
authentication and configuration directory, the OIDC credentials file), not the region; no
``[suite] pass_env`` hands the meter's key file to a task; and the command agent on Vertex gets
the project and region the gate sets, never the gate's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.core.config import load_config
from gate.errors import BadInput
from gate.secrets import scrubbed_env, withheld_notes

GOOGLE = {
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/runner/gha-creds-1234.json",
    "GOOGLE_GHA_CREDS_PATH": "/home/runner/gha-creds-1234.json",
    "CLOUDSDK_AUTH_ACCESS_TOKEN": "ya29.a0AfB_byC-not-a-real-token",
    "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE": "/home/runner/gha-creds-1234.json",
    "CLOUDSDK_CONFIG": "/home/runner/.config/gcloud",
    "CLOUDSDK_CORE_PROJECT": "gate-test-project",
}


def test_google_credentials_are_withheld_and_the_region_is_not() -> None:
    env = scrubbed_env(environ={**GOOGLE, "CLOUD_ML_REGION": "us-east5", "PATH": "/usr/bin"})
    assert env == {"CLOUD_ML_REGION": "us-east5", "PATH": "/usr/bin"}


def test_a_suites_pass_env_never_passes_the_meters_google_credentials() -> None:
    env = scrubbed_env(environ=GOOGLE, pass_env=list(GOOGLE))
    assert env == {}
    # the gate's own upstream's variables go without a note (as ANTHROPIC_API_KEY does)
    assert withheld_notes(GOOGLE, list(GOOGLE)) == []


@pytest.mark.parametrize("name", ["GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG"])
def test_gate_toml_refuses_to_pass_them(tmp_path: Path, name: str) -> None:
    (tmp_path / "gate.toml").write_text(f'[suite]\npass_env = ["{name}"]\n')
    with pytest.raises(BadInput, match=f"{name} is the gate's, the CI's or an upstream's own"):
        load_config(tmp_path / "gate.toml")
