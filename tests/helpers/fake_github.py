"""A fake of the few GitHub REST endpoints ``gate ci`` uses: a real HTTP server on loopback.

Comments (list with ``per_page``/``page`` and ``Link`` headers, create, update), labels and
their ``labeled`` events, collaborators' permissions, PR files, PR search by head, ``GET
/user``, the repository itself (its ``visibility``: public, private or internal), its GitHub
Pages site (``pages``: None is Pages not enabled, a 404 as GitHub answers), a run's
artifacts by name, and one-shot injected failures (``fail_next``) for retry and error tests. Every
request is recorded. ``fail_next(..., landed=True)`` models GitHub's worst 5xx: the request is
carried out (the comment is created) and only then answered with the error, as happens when a
backend times out after the write.

Tokens have an identity and refuse what GitHub refuses:

- an installation token (the Actions ``GITHUB_TOKEN``, a GitHub App's) cannot call ``GET
  /user``: 403 "Resource not accessible by integration";
- a read-only token (a fork's or a Dependabot PR's, a workflow without ``pull-requests:
  write``) cannot create or edit a comment: the same 403;
- no token can edit a comment another identity wrote: the same 403.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from gate.github import GitHubClient


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


NOT_ACCESSIBLE = {"message": "Resource not accessible by integration",
                  "documentation_url": "https://docs.github.com/rest"}
# role_name → the legacy ``permission`` field of GET .../collaborators/{user}/permission
_LEGACY = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read",
           "read": "read", "none": "none"}


@dataclass
class Token:
    """Whose token it is and what it may do."""

    login: str = "github-actions[bot]"
    installation: bool = True  # an App installation token (Actions' too): no GET /user
    write: bool = True  # issues / pull-requests: write
    contents: bool = True  # contents: read (a job's grant; in a public repository not needed)


@dataclass
class Failure:
    method: str
    pattern: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    times: int = 1
    landed: bool = False  # carried out, then answered with the failure


class FakeGitHub:
    """State of one repository; ``url`` is what ``GITHUB_API_URL`` should be."""

    def __init__(self, repo: str = "acme/agent", token: str | None = None, *,
                 login: str = "github-actions[bot]", installation: bool = True,
                 write: bool = True) -> None:
        self.repo = repo
        self.token = token
        # token value → identity; ``token=None`` accepts any request as ``default``
        self.default = Token(login, installation, write)
        self.tokens: dict[str, Token] = {token: self.default} if token else {}
        self.collaborators: dict[str, str] = {}  # login → role: admin/maintain/write/triage/read
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.labels: dict[int, list[str]] = {}
        self.files: dict[int, list[str]] = {}
        self.pulls: list[dict[str, Any]] = []
        self.visibility = "public"  # GET /repos/{repo}: "public", "private" or "internal"
        self.pages: dict[str, Any] | None = None  # GET /repos/{repo}/pages; None: 404
        self.artifacts: dict[int, list[dict[str, Any]]] = {}  # run id → its artifacts
        # the repository's git (a bare repository): GET /contents/{path} reads a file of it, at
        # ``ref`` or else the default branch (main); None: no file is found (404)
        self.origin: Path | None = None
        self.requests: list[Recorded] = []
        self.failures: list[Failure] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ----- test helpers --------------------------------------------------------------------

    def add_comment(self, pr: int, body: str, user: str = "someone") -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            c = {"id": self._next_id, "body": body, "user": {"login": user},
                 "html_url": f"https://github.example/{self.repo}/pull/{pr}"
                             f"#issuecomment-{self._next_id}"}
            self.comments.setdefault(pr, []).append(c)
            return c

    def enable_pages(self, branch: str = "agent-gate-data", path: str = "/",
                     build_type: str = "legacy") -> str:
        """GitHub Pages built from ``branch`` (Settings → Pages → Deploy from a branch); the
        site's address, as GitHub gives a project site."""
        owner, name = self.repo.split("/")
        url = f"https://{owner.lower()}.github.io/{name}/"
        self.pages = {"url": f"{self.url}/repos/{self.repo}/pages", "status": "built",
                      "html_url": url, "build_type": build_type,
                      "source": {"branch": branch, "path": path}, "public": True}
        return url

    def add_token(self, value: str, login: str, *, installation: bool = False,
                  write: bool = True, contents: bool = True) -> None:
        self.tokens[value] = Token(login, installation, write, contents)

    def label(self, pr: int, name: str, by: str) -> None:
        """``by`` adds the label: it is on the PR, and the issue's events say who added it."""
        with self._lock:
            if name not in self.labels.setdefault(pr, []):
                self.labels[pr].append(name)
            self._event(pr, "labeled", name, by)

    def unlabel(self, pr: int, name: str, by: str) -> None:
        with self._lock:
            if name in self.labels.get(pr, []):
                self.labels[pr].remove(name)
            self._event(pr, "unlabeled", name, by)

    def _event(self, pr: int, kind: str, name: str, by: str) -> None:
        self._next_id += 1
        self.events.setdefault(pr, []).append(
            {"id": self._next_id, "event": kind, "actor": {"login": by},
             "label": {"name": name}, "created_at": "2026-12-01T00:00:00Z"})

    def fail_next(self, method: str, pattern: str, status: int, *, times: int = 1,
                  headers: dict[str, str] | None = None, body: Any = None,
                  landed: bool = False) -> None:
        self.failures.append(Failure(method, pattern, status, headers or {},
                                     body if body is not None else {"message": f"fake {status}"},
                                     times, landed))

    def calls(self, method: str, pattern: str = "") -> list[Recorded]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # ----- the server ----------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                rec = Recorded(method, parts.path, parse_qs(parts.query),
                               {k.lower(): v for k, v in self.headers.items()}, body)
                with fake._lock:
                    fake.requests.append(rec)
                    failure = next((f for f in fake.failures if f.method == method
                                    and re.search(f.pattern, parts.path) and f.times > 0), None)
                    if failure:
                        failure.times -= 1
                if failure and not failure.landed:
                    self._send(failure.status, failure.body, failure.headers)
                    return
                auth = rec.headers.get("authorization", "")
                who = fake.tokens.get(auth.removeprefix("Bearer ")) if fake.tokens \
                    else fake.default
                if who is None:
                    self._send(401, {"message": "Bad credentials"})
                    return
                status, payload, headers = fake._route(method, parts.path, rec.query, body,
                                                       who)
                if failure:  # done, but the answer is lost: GitHub says 5xx after the write
                    self._send(failure.status, failure.body, failure.headers)
                    return
                self._send(status, payload, headers)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

        return Handler

    def _page(self, path: str, items: list[Any], query: dict[str, list[str]]
              ) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int(query.get("per_page", ["30"])[0]), 100)
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(items) // per_page))
        keep = {k: v[0] for k, v in query.items() if k not in ("page", "per_page")}
        extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in keep.items())
        links = []
        if page < last:
            links.append(f'<{self.url}{path}?per_page={per_page}&page={page + 1}{extra}>; '
                         'rel="next"')
            links.append(f'<{self.url}{path}?per_page={per_page}&page={last}{extra}>; '
                         'rel="last"')
        return 200, chunk, {"Link": ", ".join(links)} if links else {}

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any,
               who: Token) -> tuple[int, Any, dict[str, str]]:
        if path == "/user" and method == "GET":
            if who.installation:
                return 403, NOT_ACCESSIBLE, {}
            return 200, {"login": who.login, "type": "User"}, {}
        base = f"/repos/{self.repo}"
        if path == base and method == "GET":
            return 200, {"full_name": self.repo, "default_branch": "main",
                         "private": self.visibility != "public",
                         "visibility": self.visibility}, {}
        if not path.startswith(base + "/"):
            return 404, {"message": "Not Found"}, {}
        tail = path[len(base):]
        if m := re.fullmatch(r"/issues/(\d+)/comments", tail):
            pr = int(m.group(1))
            if method == "GET":
                with self._lock:
                    items = list(self.comments.get(pr, []))
                return self._page(path, items, query)
            if method == "POST":
                if not who.write:
                    return 403, NOT_ACCESSIBLE, {}
                return 201, self.add_comment(pr, body["body"], user=who.login), {}
        if (m := re.fullmatch(r"/issues/comments/(\d+)", tail)) and method == "PATCH":
            cid = int(m.group(1))
            with self._lock:
                for items in self.comments.values():
                    for c in items:
                        if c["id"] == cid:
                            if not who.write or c["user"]["login"] != who.login:
                                return 403, NOT_ACCESSIBLE, {}
                            c["body"] = body["body"]
                            return 200, c, {}
            return 404, {"message": "Not Found"}, {}
        if (m := re.fullmatch(r"/issues/(\d+)/events", tail)) and method == "GET":
            with self._lock:
                items = list(self.events.get(int(m.group(1)), []))
            return self._page(path, items, query)
        if (m := re.fullmatch(r"/collaborators/([^/]+)/permission", tail)) and method == "GET":
            login = m.group(1)
            if login.endswith("[bot]") or login.endswith("%5Bbot%5D"):
                return 404, {"message": f"{login} is not a user"}, {}
            role = self.collaborators.get(login, "read")  # a public repo: everyone reads
            return 200, {"permission": _LEGACY[role], "role_name": role,
                         "user": {"login": login}}, {}
        if (m := re.fullmatch(r"/issues/(\d+)/labels", tail)) and method == "GET":
            return self._page(path, [{"name": n} for n in self.labels.get(int(m.group(1)), [])],
                              query)
        if (m := re.fullmatch(r"/pulls/(\d+)/files", tail)) and method == "GET":
            return self._page(path, [{"filename": f} for f in self.files.get(int(m.group(1)),
                                                                              [])], query)
        if (m := re.fullmatch(r"/contents/(.+)", tail)) and method == "GET":
            if self.visibility != "public" and not who.contents:
                return 404, {"message": "Not Found"}, {}  # GitHub hides what it refuses
            return self._contents(unquote(m.group(1)), query.get("ref", ["main"])[0])
        if tail == "/pages" and method == "GET":
            if self.pages is None:
                return 404, {"message": "Not Found",
                             "documentation_url": "https://docs.github.com/rest/pages"}, {}
            return 200, self.pages, {}
        if (m := re.fullmatch(r"/actions/runs/(\d+)/artifacts", tail)) and method == "GET":
            name = query.get("name", [""])[0]
            items = [a for a in self.artifacts.get(int(m.group(1)), [])
                     if not name or a["name"] == name]
            return 200, {"total_count": len(items), "artifacts": items}, {}
        if tail == "/pulls" and method == "GET":
            head = query.get("head", [""])[0]
            items = [p for p in self.pulls if not head or p.get("_head") == head]
            return self._page(path, items, query)
        return 404, {"message": "Not Found"}, {}

    def _contents(self, path: str, ref: str) -> tuple[int, Any, dict[str, str]]:
        """A file's JSON as GitHub gives it (base64), read from :attr:`origin` at ``ref``."""
        if self.origin is None:
            return 404, {"message": "Not Found"}, {}
        found = subprocess.run(["git", "--git-dir", str(self.origin), "show", f"{ref}:{path}"],
                               capture_output=True)
        if found.returncode != 0:
            return 404, {"message": "Not Found"}, {}
        return 200, {"type": "file", "encoding": "base64", "path": path,
                     "name": path.rsplit("/", 1)[-1], "size": len(found.stdout),
                     "content": base64.encodebytes(found.stdout).decode()}, {}


def client(fake: FakeGitHub, **kw: object) -> GitHubClient:
    """The gate's client against ``fake`` with its token (any, when the fake takes any), its
    retries' sleeps recorded in ``.sleeps`` instead of slept."""
    sleeps: list[float] = []
    token = fake.token or "ghs_anyTokenTheFakeTakes"
    c = GitHubClient(fake.url, fake.repo, token, sleep=sleeps.append, **kw)  # type: ignore[arg-type]
    c.sleeps = sleeps  # type: ignore[attr-defined]
    return c
