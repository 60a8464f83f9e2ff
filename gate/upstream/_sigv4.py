"""How the meter authenticates to Amazon Bedrock: SigV4 with botocore's own signer, or a Bedrock
API key as a bearer token.

The meter is the agent's gateway (Claude Code with ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1`` signs
nothing), so it signs every forwarded request itself, from the runner's AWS credentials as
botocore's credential chain finds them (environment, shared files and profiles, web identity,
container and instance metadata): the same signer and the same chain the ``anthropic`` SDK's
``AnthropicBedrock`` uses (``anthropic/lib/aws/_auth.py``: ``SigV4Auth(credentials, "bedrock",
region)`` over an ``AWSRequest``). When the runner has a Bedrock API key
(``AWS_BEARER_TOKEN_BEDROCK``) and no AWS credentials, the request carries ``Authorization:
Bearer <key>`` instead, as that client sends it.

What is signed is the request exactly as it is sent: the path as it goes on the wire (a model ID
such as ``anthropic.claude-sonnet-4-5-20250929-v1:0`` keeps its ``:``; SigV4's canonical URI
escapes it once more, to ``%3A``), the query string, every header but the ones botocore leaves
out (``user-agent``, ``expect``, ``connection``, ...), and the SHA-256 of the body. Nothing may
change the request after it is signed: the meter sends the headers this returns, with the body
it signed, to the URL it signed.

botocore is imported here only, when a request is signed or credentials are looked up.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.errors import BadInput

SERVICE = "bedrock"  # the SigV4 service name of bedrock-runtime, as the SDK signs it
#: the Bedrock API key's environment variable (the SDK's and Claude Code's)
API_KEY_ENV = "AWS_BEARER_TOKEN_BEDROCK"
#: a request's Authorization header is computed here; one the agent sent is never forwarded
_DROP = {"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"}


@dataclass(frozen=True)
class AwsKeys:
    """AWS credentials, frozen when the meter starts (``repr`` hides the secret parts)."""

    access_key: str
    secret_key: str = field(repr=False)
    token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class BedrockAuth:
    """How the meter authenticates to Bedrock: SigV4 ``keys`` in ``region``, or an API
    ``api_key`` sent as a bearer token (then ``keys`` is ``None``)."""

    region: str
    keys: AwsKeys | None = None
    api_key: str | None = field(default=None, repr=False)

    def headers(self, method: str, url: str, headers: Mapping[str, str], body: bytes,
                when: _dt.datetime | None = None) -> dict[str, str]:
        """The headers to send with ``method url`` and ``body``: ``headers`` with any
        credential the agent put there dropped, and this auth's own added."""
        base = {k: v for k, v in headers.items() if k.lower() not in _DROP}
        if self.keys is not None:
            return sign(method, url, base, body, self.keys, self.region, when=when)
        if self.api_key:
            return {**base, "Authorization": f"Bearer {self.api_key}"}
        raise BadInput("bedrock: no AWS credentials and no Bedrock API key "
                       f"({API_KEY_ENV}) to sign the meter's requests with")


def sign(method: str, url: str, headers: Mapping[str, str], body: bytes, keys: AwsKeys,
         region: str, service: str = SERVICE,
         when: _dt.datetime | None = None) -> dict[str, str]:
    """``headers`` plus ``X-Amz-Date``, ``X-Amz-Security-Token`` (with a session token) and
    ``Authorization``, as botocore's ``SigV4Auth`` signs ``method url`` with ``body`` at
    ``when`` (UTC; now by default)."""
    from botocore.auth import SIGV4_TIMESTAMP, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method.upper(), url=url, headers=dict(headers), data=body)
    signer = SigV4Auth(Credentials(keys.access_key, keys.secret_key, keys.token), service,
                       region)
    if when is None:  # botocore's own path, its clock
        signer.add_auth(request)
    else:  # ``add_auth``'s steps with the time given (the tests' fixed clock)
        request.context["timestamp"] = when.astimezone(_dt.UTC).strftime(SIGV4_TIMESTAMP)
        signer._modify_request_before_signing(request)
        canonical = signer.canonical_request(request)
        signature = signer.signature(signer.string_to_sign(request, canonical), request)
        signer._inject_signature_to_request(request, signature)
    return {str(k): str(v) for k, v in request.headers.items()}


def chain_keys(profile: str | None = None) -> AwsKeys | None:
    """The credentials botocore's default chain finds, frozen; ``None`` when it finds none."""
    import botocore.exceptions
    import botocore.session

    session = botocore.session.Session(profile=profile)
    try:
        found: Any = session.get_credentials()
    except botocore.exceptions.BotoCoreError as exc:
        raise BadInput(f"bedrock: AWS credentials: {exc}") from None
    if found is None:
        return None
    frozen = found.get_frozen_credentials()
    return AwsKeys(frozen.access_key, frozen.secret_key, frozen.token)
