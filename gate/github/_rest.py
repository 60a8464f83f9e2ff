"""A small GitHub REST client on ``requests``: retries that respect GitHub's rules, clear errors.

GitHub's guidance (REST docs, "Rate limits"): on 403/429 with ``retry-after``, wait that long;
with ``x-ratelimit-remaining: 0``, wait until ``x-ratelimit-reset``; on a secondary limit with
neither, wait at least a minute and back off. 5xx and dropped connections are retried with
exponential backoff. Everything else is one clear error that says what permission is missing.
The token lives only in the session's headers: never in ``repr``, messages or logs.

A ``POST`` is the exception to retrying a 5xx or a lost answer: GitHub may have created the
comment and then failed to say so, and the same ``POST`` again would create a second one.
``request`` never resends a ``POST`` that may have landed; ``create`` retries it only after
asking ``find`` whether the failed attempt landed after all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
from urllib3.exceptions import NewConnectionError

from gate import __version__
from gate.errors import ForgeError

RETRY_STATUSES = frozenset({500, 502, 503, 504})
# Methods whose repetition has the effect of one call: resent freely on a 5xx. (A PATCH of a
# comment with the same body is one edit however often it lands.)
_REPEATABLE = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})
_SECONDARY_WORDS = ("secondary rate limit", "abuse", "rate limit")


class GitHubError(ForgeError):
    """GitHub refused or failed a request; the message says what to change (exit 2)."""

    def __init__(self, message: str, status: int | None = None, *,
                 transient: bool = False, maybe_landed: bool = False) -> None:
        super().__init__(message, status)
        # GitHub being down or rate-limiting us, not something the user must fix
        self.transient = transient
        # a POST GitHub may have carried out though it failed to answer (a 5xx, a lost reply)
        self.maybe_landed = maybe_landed
        # seconds GitHub asked to wait (its ``retry-after``), when it asked
        self.retry_after: float | None = None


class GitHubClient:
    """REST calls against one repository with one token."""

    def __init__(
        self,
        api_url: str,
        repository: str,
        token: str | None,
        *,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_wait: float = 120.0,
        timeout: float = 30.0,
        secondary_wait: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.timeout = timeout
        self.secondary_wait = secondary_wait
        self._sleep = sleep
        self._session = requests.Session()
        self._session.headers.update({
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": f"agent-gate/{__version__}",
        })
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"
        # A GitHub App installation token (``ghs_``): the Actions ``GITHUB_TOKEN`` is one. It
        # acts as ``<app>[bot]`` and GitHub refuses it ``GET /user``.
        self.installation_token = bool(token and token.startswith("ghs_"))

    def __repr__(self) -> str:
        return f"GitHubClient({self.api_url!r}, {self.repository!r}, token=<hidden>)"

    def close(self) -> None:
        self._session.close()

    def repo_path(self, tail: str) -> str:
        return f"/repos/{self.repository}/{tail.lstrip('/')}"

    # ----- requests ------------------------------------------------------------------------

    def request(
        self, method: str, path: str, *, what: str, permission: str | None = None,
        params: dict[str, Any] | None = None, json: Any = None,
    ) -> requests.Response:
        """One call, retried when GitHub says to wait. ``what`` and ``permission`` word errors.

        ``path`` is a path under the API root or a full URL (a ``Link: rel=next`` target).
        A ``POST`` that may have landed (a 5xx, an answer lost after sending) is not resent:
        its error says ``maybe_landed``; use :meth:`create` to retry one safely.
        """
        url = path if path.startswith(("http://", "https://")) else self.api_url + path
        repeatable = method.upper() in _REPEATABLE
        attempt = 0
        while True:
            try:
                resp = self._session.request(method, url, params=params, json=json,
                                             timeout=self.timeout)
            except requests.RequestException as exc:
                landed = not repeatable and not _never_sent(exc)
                if landed or attempt >= self.max_retries:
                    raise GitHubError(f"cannot reach the GitHub API to {what}: "
                                      f"{type(exc).__name__}", transient=True,
                                      maybe_landed=landed) from None
                self._sleep(self._backoff(attempt))
                attempt += 1
                continue
            if resp.status_code < 400:
                return resp
            if not repeatable and resp.status_code in RETRY_STATUSES:
                err = self._error(resp, what, permission)
                err.maybe_landed = True
                if (after := resp.headers.get("retry-after")) is not None:
                    try:
                        err.retry_after = float(after)
                    except ValueError:
                        err.retry_after = 60.0
                raise err
            wait = self._retry_wait(resp, attempt)
            if wait is not None and attempt < self.max_retries:
                self._sleep(wait)
                attempt += 1
                continue
            raise self._error(resp, what, permission)

    def create(self, path: str, *, json: Any, what: str, find: Callable[[], Any | None],
               permission: str | None = None) -> Any:
        """``POST`` what must exist at most once (a comment) and return it (the JSON).

        When an attempt may have landed (GitHub answered 5xx, or the answer was lost), the
        next one waits as a retry would, then asks ``find()`` for what that attempt would have
        created: if it is there, it is the answer, and nothing is posted again.
        """
        attempt = 0
        while True:
            try:
                return self.request("POST", path, what=what, permission=permission,
                                    json=json).json()
            except GitHubError as exc:
                wait = self._backoff(attempt) if exc.retry_after is None \
                    else self._bounded(exc.retry_after)
                if not exc.maybe_landed or attempt >= self.max_retries or wait is None:
                    raise
            self._sleep(wait)
            attempt += 1
            found = find()
            if found is not None:
                return found

    def paginate(self, path: str, *, what: str, per_page: int = 100,
                 permission: str | None = None,
                 query: dict[str, str] | None = None) -> Iterator[Any]:
        """Every item of a list endpoint, following ``Link: rel="next"`` to the last page.

        ``query`` is sent URL-encoded (a branch name may hold ``#``, ``&``, ``+`` or ``%``)."""
        url: str | None = path
        params: dict[str, Any] | None = {**(query or {}), "per_page": per_page}
        while url:
            resp = self.request("GET", url, what=what, params=params, permission=permission)
            items = resp.json()
            if not isinstance(items, list):
                raise GitHubError(f"unexpected answer from GitHub when trying to {what}")
            yield from items
            url = resp.links.get("next", {}).get("url")
            params = None  # the next link carries its own query

    # ----- decisions -----------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff * (2 ** attempt), self.max_wait)

    def _retry_wait(self, resp: requests.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when the error is final."""
        status = resp.status_code
        if status not in RETRY_STATUSES and status not in (403, 429):
            return None
        h = resp.headers
        retry_after = h.get("retry-after")
        if retry_after is not None:  # GitHub's own word wins, on a 5xx too
            try:
                return self._bounded(float(retry_after))
            except ValueError:
                return self._bounded(60.0)
        if status in RETRY_STATUSES:
            return self._backoff(attempt)
        if h.get("x-ratelimit-remaining") == "0":
            try:
                reset = float(h.get("x-ratelimit-reset", "0"))
            except ValueError:
                reset = 0.0
            return self._bounded(max(reset - time.time(), 0.0) + 1.0)
        if status == 429 or any(w in _message(resp).lower() for w in _SECONDARY_WORDS):
            # a secondary limit with no hint: GitHub asks for at least a minute, then backoff
            return self._bounded(max(self.secondary_wait, self._backoff(attempt)))
        return None  # a plain 403: a permission problem, retrying will not help

    def _bounded(self, seconds: float) -> float | None:
        """A wait longer than ``max_wait`` is not worth blocking CI on: fail clearly instead."""
        return seconds if seconds <= self.max_wait else None

    def _error(self, resp: requests.Response, what: str, permission: str | None) -> GitHubError:
        status = resp.status_code
        msg = _message(resp)
        detail = f" (GitHub said: {msg})" if msg else ""
        if status == 401:
            text = (f"GitHub rejected the token (401) when trying to {what}{detail}: pass a "
                    "valid token (the action's `github-token` input, default "
                    "`${{ github.token }}`)")
        elif status in (403, 429) and ("rate limit" in msg.lower() or status == 429):
            return GitHubError(f"GitHub's rate limit stopped the gate from trying to {what}"
                               f"{detail}; re-run the job later", status, transient=True)
        elif status == 403:
            need = f"add `{permission}` to the workflow's `permissions:`" if permission \
                else "check the workflow's `permissions:`"
            text = (f"the token cannot {what} (403){detail}: {need} (a pull request from a "
                    "fork gets a read-only token whatever the workflow asks, one Dependabot "
                    "opened gets one unless `permissions:` grants more: see docs/github.md)")
        elif status == 404:
            need = f" or lacks `{permission}`" if permission else ""
            text = (f"GitHub answered 404 when trying to {what}{detail}: the repository or pull "
                    f"request does not exist, or the token cannot see it{need}")
        elif status == 422:
            text = f"GitHub refused to {what} (422){detail}"
        else:
            text = f"GitHub failed to {what} (HTTP {status}){detail}"
        return GitHubError(text, status, transient=status >= 500)


def _never_sent(exc: requests.RequestException) -> bool:
    """True when the request cannot have reached GitHub: no connection was ever made."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    if isinstance(exc, requests.ConnectionError) and exc.args:
        reason = getattr(exc.args[0], "reason", exc.args[0])
        return isinstance(reason, NewConnectionError)
    return False


def _message(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:300]
    return ""
