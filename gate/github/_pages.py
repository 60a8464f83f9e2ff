"""GitHub Pages from the data branch: where a published report lives, whether the repository
may publish at all, what Pages serves, and the push of a published page (an adapter: which
page is published is ``gate.ci``'s call).

- A report is published at ``reports/<name>/index.html`` on the data branch: ``<name>`` is
  the refreshed branch (``reports/main/``) or ``pr-<number>``; the badge at ``badge.svg``;
  ``.nojekyll`` keeps Pages from running Jekyll over the branch (files are served as they are).
  The layout is forge-neutral: ``gate.pool.refresh``.
- Only a **public** repository publishes: a Pages site is public on most plans whatever the
  repository's visibility. The visibility comes from the event's ``repository`` (every
  event carries it), else from ``GET /repos/{owner}/{repo}``; unknown counts as not public.
- The page's address is Pages' own (``GET /repos/{owner}/{repo}/pages`` → ``html_url``: a
  custom domain and GitHub Enterprise Server's Pages host included), and only when that site
  is built from the data branch's root by GitHub's own build (``build_type`` ``legacy``). A 404
  is "Pages is not enabled".
"""

from __future__ import annotations

import base64
import binascii
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gate._git import git
from gate._git import last_line as _last_line
from gate.errors import BadInput, GateError
from gate.github import _git
from gate.github._environment import CIEnvironment
from gate.github._rest import GitHubClient, GitHubError

#: pushes of a published page after the data branch moved on (another refresh, another PR)
RETRIES = 3


@dataclass(frozen=True)
class PagesSite:
    """The repository's Pages site: its address and what it is built from."""

    url: str  # html_url, ending in "/"
    branch: str
    path: str
    build_type: str

    def serves(self, branch: str) -> bool:
        """Whether the site serves ``branch``'s files as they are (from its root)."""
        return (self.build_type in ("legacy", "") and self.branch == branch
                and self.path in ("/", ""))

    def page_url(self, rel: str) -> str:
        return self.url + rel.removesuffix("index.html")


def repository_public(env: CIEnvironment, client: GitHubClient | None) -> tuple[bool, str]:
    """(public, the visibility as found): the event's ``repository``, else the API's."""
    found: Any = env.event.get("repository")
    if not (isinstance(found, dict) and ("visibility" in found or "private" in found)):
        if client is None:
            return False, "unknown"
        try:
            found = client.request("GET", f"/repos/{client.repository}",
                                   what="read the repository's visibility").json()
        except (GitHubError, ValueError):
            return False, "unknown"
    if not isinstance(found, dict):
        return False, "unknown"
    visibility = found.get("visibility")
    if isinstance(visibility, str):
        return visibility == "public", visibility
    if isinstance(found.get("private"), bool):
        return not found["private"], "private" if found["private"] else "public"
    return False, "unknown"


def _found(client: GitHubClient, tail: str, what: str, permission: str) -> Any:
    """``GET`` a path of the repository: its JSON, or None for a 404 or a body that is not
    JSON. Another failure raises ``GitHubError``."""
    try:
        return client.request("GET", client.repo_path(tail), what=what,
                              permission=permission).json()
    except GitHubError as exc:
        if exc.status == 404:
            return None
        raise
    except ValueError:
        return None


def pages_site(client: GitHubClient) -> PagesSite | None:
    """The Pages site, or None when Pages is not enabled (404). Another failure raises."""
    data = _found(client, "pages", "read the GitHub Pages site", "pages: read")
    if not isinstance(data, dict) or not str(data.get("html_url") or "").startswith("https://"):
        return None
    source: dict[str, Any] = data["source"] if isinstance(data.get("source"), dict) else {}
    return PagesSite(str(data["html_url"]).rstrip("/") + "/", str(source.get("branch") or ""),
                     str(source.get("path") or "/"), str(data.get("build_type") or ""))


def default_branch_file(client: GitHubClient, path: str) -> str | None:
    """A file of the repository's default branch, read through the API (``GET
    /repos/{owner}/{repo}/contents/{path}``, no ``ref``: the default branch), or None when the
    branch has no such file (404). Another failure raises ``GitHubError``."""
    data = _found(client, "contents/" + quote(path), f"read {path} on the default branch",
                  "contents: read")
    if not (isinstance(data, dict) and data.get("type") == "file"
            and data.get("encoding") == "base64" and isinstance(data.get("content"), str)):
        return None
    try:
        return base64.b64decode(data["content"]).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def raw_url(server_url: str, repository: str, branch: str, rel: str) -> str:
    """A file of ``branch`` by the server's raw route (github.com redirects it to its raw host;
    GitHub Enterprise Server serves it itself)."""
    return f"{server_url.rstrip('/')}/{repository}/raw/{branch}/{rel}"


def publish_files(files: Mapping[str, str], branch: str, message: str, *, env: CIEnvironment,
                  token: str | None) -> str:
    """Commit ``files`` onto the data branch (creating it as an orphan branch when absent)
    from a scratch repository of the gate's own (never a workspace a fork's files may be in),
    and push; on a moved branch fetch and commit again, ``RETRIES`` times. The commit's
    id; a refusal raises ``BadInput``."""
    with tempfile.TemporaryDirectory(prefix="gate-pages-") as tmp:
        root = Path(tmp)
        for args in (("init", "-q"), ("remote", "add", "origin",
                                      f"{env.server_url}/{env.repository}.git")):
            r = git(root, *args)
            if r.returncode != 0:
                raise BadInput(f"cannot prepare the publishing repository: "
                               f"{_last_line(r.stderr)}")
        # its tip only: the data branch's history (every page ever published) is not needed
        _git._with_token(root, "fetch", "--no-tags", "--depth=1", "origin",
                         f"+refs/heads/{branch}:{_git.remote_ref(branch)}", token=token,
                         server_url=env.server_url)
        for _ in range(1 + RETRIES):
            tip = _git.fetch_branch(root, branch, token=token, server_url=env.server_url)
            sha = _git.commit_files(root, tip, dict(files), message)
            if _git.push(root, sha, branch, token=token, server_url=env.server_url):
                return sha
    raise BadInput(f"the data branch {branch} moved on {RETRIES + 1} times while the report "
                   "was published: not published")


def run_artifact_url(client: GitHubClient, env: CIEnvironment, run_id: str,
                     name: str) -> str | None:
    """The page of the workflow run ``run_id``'s artifact ``name`` (found by name: ``actions:
    read``), None when there is none (expired, not uploaded) or GitHub does not say."""
    try:
        found = client.request("GET", client.repo_path(f"actions/runs/{run_id}/artifacts"),
                               params={"name": name}, what="find the report artifact",
                               permission="actions: read").json()
    except (GateError, ValueError):
        return None
    ids = [a.get("id") for a in (found or {}).get("artifacts") or [] if isinstance(a, dict)
           and a.get("name") == name and not a.get("expired")]
    if not ids or not str(ids[0]).isdigit():
        return None
    return f"{env.server_url}/{env.repository}/actions/runs/{run_id}/artifacts/{ids[0]}"
