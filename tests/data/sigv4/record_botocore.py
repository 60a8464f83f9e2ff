"""Records, once, the signature botocore gives a Bedrock InvokeModel request through the
anthropic SDK's own signing path (``anthropic.lib.aws._auth.get_auth_headers``: botocore's
``SigV4Auth`` with service ``bedrock``), the clock fixed; writes the JSON of
``bedrock-invoke-botocore.json`` to stdout. Not a test: the file it wrote is the fixture, and
tests/unit/test_bedrock_sigv4.py checks the gate's signer and the simulator's check against it.

    python3 tests/data/sigv4/record_botocore.py > tests/data/sigv4/bedrock-invoke-botocore.json
"""

from __future__ import annotations

import datetime as dt
import json
from unittest import mock

import anthropic
import botocore
import httpx2  # the installed SDK's HTTP client
from anthropic.lib.aws._auth import get_auth_headers

WHEN = dt.datetime(2026, 12, 6, 10, 30, 0)
URL = ("https://bedrock-runtime.us-east-1.amazonaws.com/model/"
       "anthropic.claude-sonnet-4-5-20250929-v1:0/invoke")
ACCESS, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
# the session token of AWS's test suite (post-sts-token)
TOKEN = ("AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxf"
         "pSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KP"
         "kyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbq"
         "BAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==")


def main() -> None:
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 16,
                       "messages": [{"role": "user", "content": "hi"}]},
                      separators=(",", ":")).encode()
    headers = {"content-type": "application/json", "accept": "application/json",
               "host": "bedrock-runtime.us-east-1.amazonaws.com",
               "anthropic-beta": "prompt-caching-2024-07-31"}
    kept = ("authorization", "x-amz-date", "x-amz-security-token")
    out = {}
    for label, token in (("long-term keys", None), ("session token", TOKEN)):
        with mock.patch("botocore.auth.get_current_datetime", return_value=WHEN):
            got = get_auth_headers(method="post", url=URL, headers=httpx2.Headers(headers),
                                   aws_access_key=ACCESS, aws_secret_key=SECRET,
                                   aws_session_token=token, region="us-east-1", profile=None,
                                   data=body, service_name="bedrock")
        out[label] = {"session_token": token,
                      "signed_headers": {k: v for k, v in got.items() if k.lower() in kept}}
    print(json.dumps({
        "source": f"recorded with botocore {botocore.__version__} through the anthropic SDK "
                  f"{anthropic.__version__}'s own signing path (anthropic.lib.aws._auth."
                  "get_auth_headers, SigV4Auth service 'bedrock'), its clock fixed at the time "
                  "below; docs/upstreams.md says how",
        "access_key": ACCESS, "secret_key": SECRET, "region": "us-east-1", "service": "bedrock",
        "time": WHEN.strftime("%Y%m%dT%H%M%SZ"), "method": "POST", "url": URL,
        "headers": headers, "body": body.decode(), "recorded": out}, indent=2))


if __name__ == "__main__":
    main()
