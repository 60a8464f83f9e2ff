"""SigV4 for Bedrock: the meter's signer (botocore's, gate/upstream/_sigv4.py) and the
simulator's own check (hashlib and hmac from the specification, gate/sim/_sigv4check.py) each
pass AWS's published test vectors and agree with a signature recorded from botocore through the
anthropic SDK's signing path for a Bedrock InvokeModel request whose model ID holds a ``:``.
The check shares no code with the signer, so a canonicalisation bug in either shows here."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gate.sim._sigv4check import SignatureError, canonical_uri, verify
from gate.upstream import AwsKeys, BedrockAuth, sign

DATA = Path(__file__).resolve().parents[1] / "data" / "sigv4"
SUITE = json.loads((DATA / "aws-sigv4-test-suite.json").read_text(encoding="utf-8"))
RECORDED = json.loads((DATA / "bedrock-invoke-botocore.json").read_text(encoding="utf-8"))
SUITE_TIME = dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC)
VECTORS = {v["name"].split(" ")[0].rstrip(":"): v for v in SUITE["vectors"]}


def _suite_secret(key: str) -> tuple[str, str | None] | None:
    return (SUITE["secret_key"], None) if key == SUITE["access_key"] else None


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_the_signer_passes_aws_test_vectors(name: str) -> None:
    v = VECTORS[name]
    got = sign(v["method"], "https://example.amazonaws.com" + v["path"], dict(v["headers"]),
               v["body"].encode(), AwsKeys(SUITE["access_key"], SUITE["secret_key"]),
               SUITE["region"], SUITE["service"], when=SUITE_TIME)
    assert got["Authorization"] == v["authorization"]


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_the_simulators_check_passes_aws_test_vectors(name: str) -> None:
    v = VECTORS[name]
    headers = [*map(tuple, v["headers"]), ("Authorization", v["authorization"])]
    signed = verify(v["method"], v["path"], headers, v["body"].encode(), _suite_secret)
    assert signed.access_key == "AKIDEXAMPLE" and signed.region == "us-east-1"
    if "canonical_request" in v:
        assert signed.canonical_request == v["canonical_request"]


def test_the_check_refuses_a_vector_with_one_byte_changed() -> None:
    v = VECTORS["post-x-www-form-urlencoded"]
    headers = [*map(tuple, v["headers"]), ("Authorization", v["authorization"])]
    with pytest.raises(SignatureError) as err:
        verify(v["method"], v["path"], headers, b"Param1=value2", _suite_secret)
    assert err.value.kind == "InvalidSignatureException"
    with pytest.raises(SignatureError) as err:
        verify(v["method"], v["path"], headers, v["body"].encode(), lambda k: None)
    assert err.value.kind == "UnrecognizedClientException"


def _recorded(label: str) -> tuple[dict[str, str], dict[str, str]]:
    rec = RECORDED["recorded"][label]
    return RECORDED["headers"], rec["signed_headers"]


@pytest.mark.parametrize("label", ["long-term keys", "session token"])
def test_the_signer_reproduces_botocores_signature_of_a_bedrock_invoke(label: str) -> None:
    headers, want = _recorded(label)
    token = RECORDED["recorded"][label]["session_token"]
    when = dt.datetime.strptime(RECORDED["time"], "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
    auth = BedrockAuth(RECORDED["region"],
                       keys=AwsKeys(RECORDED["access_key"], RECORDED["secret_key"], token))
    got = auth.headers("POST", RECORDED["url"], headers, RECORDED["body"].encode(), when=when)
    assert {k: got[k] for k in want} == want
    assert ":0/invoke" in RECORDED["url"]  # the ':' of the model ID, as the SDK sends it


@pytest.mark.parametrize("label", ["long-term keys", "session token"])
def test_the_simulators_check_accepts_botocores_signature_with_the_colon(label: str) -> None:
    headers, signed_headers = _recorded(label)
    token = RECORDED["recorded"][label]["session_token"]
    path = urlsplit(RECORDED["url"]).path
    sent = [*headers.items(), *signed_headers.items()]
    signed = verify("POST", path, sent, RECORDED["body"].encode(),
                    lambda k: (RECORDED["secret_key"], token), service="bedrock")
    assert signed.canonical_request.splitlines()[1] == \
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke"
    # the same request sent with the ':' escaped is another canonical URI (AWS escapes the
    # escape): botocore's signature of the raw ':' does not hold for it
    with pytest.raises(SignatureError):
        verify("POST", path.replace(":", "%3A"), sent, RECORDED["body"].encode(),
               lambda k: (RECORDED["secret_key"], token), service="bedrock")


def test_a_check_that_forgot_to_escape_the_colon_would_be_caught() -> None:
    """The canonical URI escapes ':' (a path byte outside the unreserved set); one that kept
    it would compute another signature than botocore's and refuse every Bedrock request."""
    assert canonical_uri("/model/a-v1:0/invoke") == "/model/a-v1%3A0/invoke"
    assert canonical_uri("/model/a-v1%3A0/invoke") == "/model/a-v1%253A0/invoke"
    assert canonical_uri("/a/./b/../c//d") == "/a/c/d"


def test_a_bearer_api_key_instead_of_keys() -> None:
    auth = BedrockAuth("us-east-1", api_key="bedrock-api-key-1")
    got = auth.headers("POST", "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/invoke",
                       {"Authorization": "Bearer run-token", "content-type": "application/json"},
                       b"{}")
    assert got == {"content-type": "application/json",
                   "Authorization": "Bearer bedrock-api-key-1"}


def test_an_expired_signature_is_refused() -> None:
    v = VECTORS["get-vanilla"]
    headers = [*map(tuple, v["headers"]), ("Authorization", v["authorization"])]
    late = SUITE_TIME + dt.timedelta(minutes=6)
    with pytest.raises(SignatureError, match="expired"):
        verify("GET", "/", headers, b"", _suite_secret, now=late)
    verify("GET", "/", headers, b"", _suite_secret, now=SUITE_TIME + dt.timedelta(minutes=4))
