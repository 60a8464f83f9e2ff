"""The Google access token the meter signs Vertex requests with: from application default
credentials (a real service-account key file, ``GOOGLE_APPLICATION_CREDENTIALS``), fetched from
the key's token endpoint (served on loopback), reused while valid and refreshed once expired."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import Unmeasurable
from gate.upstream import GoogleToken
from tests.helpers.google import service_account_key, token_endpoint


def test_the_token_comes_from_the_key_files_token_endpoint_and_is_reused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with token_endpoint(expires_in=3600) as (ep, key):
        keyfile = service_account_key(tmp_path / "sa.json", key, ep.url)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(keyfile))
        token = GoogleToken()
        assert token.headers() == {"authorization": "Bearer ya29.test-token-1"}
        assert token.bearer() == "ya29.test-token-1"  # valid for an hour: not asked again
        assert ep.issued == ["ya29.test-token-1"] and ep.refused == []
        assert token.project == "gate-test-project"


def test_an_expired_token_is_refreshed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a token valid for 1 s is inside google-auth's refresh margin: expired at once
    with token_endpoint(expires_in=1) as (ep, key):
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_key(tmp_path / "sa.json", key, ep.url)))
        token = GoogleToken()
        first, second = token.bearer(), token.bearer()
        assert (first, second) == ("ya29.test-token-1", "ya29.test-token-2")
        assert token.refreshes == 2


def test_a_refused_credential_is_unmeasurable_not_the_agents(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa

    with token_endpoint() as (ep, _key):
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS",
                           str(service_account_key(tmp_path / "sa.json", other, ep.url)))
        with pytest.raises(Unmeasurable, match="refused the gate's credentials"):
            GoogleToken().bearer()
        assert ep.refused == ["signature"]


def test_no_credentials_at_all_names_the_ways_to_give_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    with pytest.raises(Unmeasurable, match="GOOGLE_APPLICATION_CREDENTIALS"):
        GoogleToken().bearer()
