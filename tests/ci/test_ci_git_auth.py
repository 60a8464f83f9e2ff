"""``gate ci`` authenticates its own git with the token it holds.

The documented workflows check out with ``persist-credentials: false``, so no task finds the
token in ``.git/config``; the base-branch fetch (a shallow PR checkout has no base ref) and the
baseline push must then carry the token themselves. The remote here is real smart HTTP:
``git http-backend`` behind a loopback server that refuses every request without the token.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_ci import REPO, TOKEN, Project, _clean_env, _project, sh

from gate.github import _git


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
                env = {**_clean_env(), "GIT_PROJECT_ROOT": str(outer.root),
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


@pytest.fixture
def private(tmp_path: Path) -> Iterator[tuple[Project, GitOverHTTP]]:
    for project in _project(tmp_path, sim=False):
        with GitOverHTTP(project.origin.parent, TOKEN) as server:
            yield project, server


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


@pytest.mark.slow
def test_pr_run_fetches_the_base_branch_with_its_own_token(
    private: tuple[Project, GitOverHTTP],
) -> None:
    project, server = private
    author = project.clone("author")
    sh(author, "git", "checkout", "-q", "-b", "docs")
    (author / "README.md").write_text("docs\n")
    sh(author, "git", "add", "-A")
    sh(author, "git", "commit", "-q", "-m", "docs")
    sh(author, "git", "push", "-q", "origin", "docs")
    ci = _clone(server, project, "ci", "docs")
    # without the token the base branch cannot be fetched: the server really refuses
    anon = subprocess.run(["git", "fetch", "--depth=1", "origin", "main"], cwd=ci,
                          capture_output=True, text=True, check=False,
                          env={**_clean_env(), "GIT_TERMINAL_PROMPT": "0"})
    assert anon.returncode != 0 and server.refused
    server.authorized.clear()
    run = project.gate_ci(ci, env={"GITHUB_SERVER_URL": server.url})
    assert run.code == 0, run.stderr
    assert run.outputs["verdict"] == "pass"
    assert any("git-upload-pack" in r for r in server.authorized)
    assert TOKEN not in (ci / ".git" / "config").read_text()
    run.no_secrets(project.gh)


@pytest.mark.slow
def test_main_run_pushes_the_refreshed_baseline_with_its_own_token(
    private: tuple[Project, GitOverHTTP],
) -> None:
    project, server = private
    main = _clone(server, project, "main-ci", "main")
    event = main.parent / "push-event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main",
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    run = project.gate_ci(main, "--baseline-refresh", "commit", event="push", event_path=event,
                          ref="refs/heads/main", env={"GITHUB_SERVER_URL": server.url})
    assert run.code == 0, run.stderr
    assert run.outputs["baseline_commit"]
    assert any("git-receive-pack" in r for r in server.authorized)
    pushed = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    assert pushed.strip() == run.outputs["baseline_commit"]
    assert TOKEN not in (main / ".git" / "config").read_text()
    run.no_secrets(project.gh)


def test_git_runs_without_the_gates_credentials(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """git, and any hook or helper it starts, is a process a task could read the environment
    of: the gate's credentials are not in it; an inherited GIT_CONFIG_* group stays whole, and
    the token's header is added after it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-git-env-SECRET-1")
    monkeypatch.setenv("GATE_GITHUB_TOKEN", "ghs_gitENVsecret12345")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.directory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "*")
    sh(tmp_path, "git", "init", "-q")
    r = _git.git(tmp_path, "-c", "alias.showenv=!env", "showenv",
                 env=_git._auth_env("ghs_gitENVsecret12345", "https://github.example"))
    assert r.returncode == 0, r.stderr
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    assert "sk-ant-git-env-SECRET-1" not in r.stdout
    assert "ANTHROPIC_API_KEY" not in env and "GATE_GITHUB_TOKEN" not in env
    assert env["GIT_CONFIG_KEY_0"] == "safe.directory" and env["GIT_CONFIG_COUNT"] == "3"
    assert env["GIT_CONFIG_KEY_2"] == "http.https://github.example/.extraheader"
    r = _git.git(tmp_path, "config", "--get-all", "http.https://github.example/.extraheader")
    assert r.returncode == 1  # nothing written to .git/config


@pytest.mark.slow
def test_a_hook_planted_during_the_suite_never_runs_with_the_token(
    private: tuple[Project, GitOverHTTP], tmp_path: Path,
) -> None:
    """The suite runs as the gate's user and can write the checkout's ``.git``: a hook or a
    config entry (a proxy, no TLS check) planted there would run with, or send away, the
    token the baseline push carries. A git configuration changed by the suite stops the push."""
    project, server = private
    main = _clone(server, project, "main-ci", "main")
    loot = tmp_path / "loot"
    hostile = tmp_path / "hostile.sh"
    hostile.write_text(
        'echo "$1" > out.txt\n'
        f'mkdir -p {main}/.git/hooks\n'
        f"printf '#!/bin/sh\\nenv >> {loot}\\ncat > /dev/null\\n' > {main}/.git/hooks/pre-push\n"
        f'chmod +x {main}/.git/hooks/pre-push\n')
    event = main.parent / "push-event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main",
                                 "repository": {"full_name": REPO, "default_branch": "main"}}))
    before = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    run = project.gate_ci(main, "--baseline-refresh", "commit", event="push", event_path=event,
                          ref="refs/heads/main", env={"GITHUB_SERVER_URL": server.url,
                                                      "AGENT_HELPER": str(hostile)})
    assert (main / ".git" / "hooks" / "pre-push").exists()  # the suite did plant it
    assert not loot.exists() or server.expected.split()[1] not in loot.read_text()
    assert run.code == 3, run.stderr
    assert "git configuration changed while the suite ran" in run.stderr
    after = sh(project.tmp, "git", "--git-dir", str(project.origin), "rev-parse", "main")
    assert after == before
