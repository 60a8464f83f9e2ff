"""A smart-HTTP git remote on loopback that wants the token, as GitHub's for a private
repository."""

from __future__ import annotations

import base64
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.helpers.ci import TOKEN, Project, sh
from tests.helpers.process import user_env


class GitOverHTTP:
    """Smart-HTTP git on 127.0.0.1 that answers 401 unless ``Authorization`` carries the
    token, as GitHub does for a private repository."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.expected = "basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
        self.authorized: list[str] = []
        self.refused: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> GitOverHTTP:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _cgi(self) -> None:
                path, _, query = self.path.partition("?")
                if self.headers.get("Authorization", "").lower() != outer.expected.lower():
                    outer.refused.append(f"{self.command} {path}")
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                outer.authorized.append(f"{self.command} {path}?{query}")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {**user_env(), "GIT_PROJECT_ROOT": str(outer.root),
                       "GIT_HTTP_EXPORT_ALL": "1", "REQUEST_METHOD": self.command,
                       "PATH_INFO": path, "QUERY_STRING": query, "REMOTE_USER": "bot",
                       "REMOTE_ADDR": "127.0.0.1",
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "CONTENT_LENGTH": str(len(body)),
                       "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                       "GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
                p = subprocess.run(["git", "http-backend"], input=body, env=env,
                                   capture_output=True, timeout=60, check=False)
                head, _, payload = p.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode().split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _cgi
            do_POST = _cgi

        return Handler


def _clone(server: GitOverHTTP, project: Project, name: str, branch: str) -> Path:
    """A checkout as actions/checkout leaves it with persist-credentials: false: one commit,
    origin over HTTP, and no credential anywhere in .git."""
    dest = project.tmp / name
    sh(project.tmp, "git", "-c", f"http.extraHeader=Authorization: {server.expected}",
       "clone", "--quiet", "--depth=1", "--branch", branch,
       f"{server.url}/{project.origin.name}", str(dest))
    config = (dest / ".git" / "config").read_text()
    assert TOKEN not in config and server.expected.split()[1] not in config
    return dest
