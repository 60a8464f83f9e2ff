"""Google credentials for tests, all real: a service account's JSON key generated here (an RSA
key from ``cryptography``), whose ``token_uri`` points at an OAuth token endpoint served on
loopback. The endpoint checks the signed assertion google-auth sends (RS256 over the key, the
cloud-platform scope, the audience) and answers with numbered access tokens, each valid for
``expires_in`` seconds."""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@dataclass
class TokenEndpoint:
    """What the endpoint issued and saw: ``issued`` tokens in order; ``refused`` reasons."""

    url: str
    public_key: Any
    expires_in: int = 3600
    issued: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def check(self, form: dict[str, str]) -> str | None:
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return "grant_type"
        head, claims, sig = form.get("assertion", "..").split(".")
        try:
            self.public_key.verify(_b64(sig), f"{head}.{claims}".encode(),
                                   padding.PKCS1v15(), hashes.SHA256())
        except Exception:
            return "signature"
        body = json.loads(_b64(claims))
        if SCOPE not in str(body.get("scope", "")).split():
            return "scope"
        if body.get("aud") != GOOGLE_TOKEN_AUDIENCE:  # google-auth's, whatever the token_uri
            return "audience"
        return None


@contextmanager
def token_endpoint(expires_in: int = 3600) -> Iterator[tuple[TokenEndpoint, Any]]:
    """A loopback OAuth token endpoint and the private key it trusts."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    state: dict[str, TokenEndpoint] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            ep = state["ep"]
            form = dict(urllib.parse.parse_qsl(
                self.rfile.read(int(self.headers.get("content-length") or 0)).decode()))
            why = ep.check(form)
            if why is None:
                ep.issued.append(f"ya29.test-token-{len(ep.issued) + 1}")
                status, out = 200, {"access_token": ep.issued[-1], "token_type": "Bearer",
                                    "expires_in": ep.expires_in}
            else:
                ep.refused.append(why)
                status, out = 400, {"error": "invalid_grant", "error_description": why}
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["ep"] = TokenEndpoint(f"http://127.0.0.1:{server.server_address[1]}/token",
                                key.public_key(), expires_in)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state["ep"], key
    finally:
        server.shutdown()
        server.server_close()


def service_account_key(path: Path, key: Any, token_uri: str,
                        project: str = "gate-test-project") -> Path:
    """A service account's JSON key file, as the console downloads it, at ``path``."""
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path.write_text(json.dumps({
        "type": "service_account", "project_id": project, "private_key_id": "0123abcd",
        "private_key": pem, "client_email": f"gate@{project}.iam.gserviceaccount.com",
        "client_id": "1234567890", "token_uri": token_uri,
        "auth_uri": "https://accounts.google.com/o/oauth2/auth"}))
    return path
