"""``CIEnvironment``: the Actions environment (read by ``_env``, the one reader of
``GITHUB_*``) typed and validated once, so the rest of ``gate.github`` works on a testable
value. Secrets are ``SecretStr``: they never reach a ``repr``, a log line or an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from gate.errors import BadInput
from gate.github._env import actions_environ

# GitHub withholds secrets from pull requests opened by these actors even in the same repo.
_SECRETLESS_ACTORS = frozenset({"dependabot[bot]"})


class PullRequestInfo(BaseModel):
    """What the gate needs to know about the pull request under test."""

    model_config = ConfigDict(frozen=True)

    number: int
    base_ref: str
    head_ref: str = ""
    head_sha: str = ""
    head_repo: str = ""
    labels: tuple[str, ...] = ()
    html_url: str = ""


class CIEnvironment(BaseModel):
    """The standard Actions environment plus the two secrets, typed and validated once."""

    model_config = ConfigDict(frozen=True)

    event_name: str = ""
    event: dict[str, Any] = Field(default_factory=dict, repr=False)
    repository: str = ""
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    run_id: str = ""
    run_attempt: str = ""
    sha: str = ""
    ref: str = ""
    base_ref: str = ""
    actor: str = ""
    step_summary: Path | None = None
    output: Path | None = None
    token: SecretStr | None = None
    model_credential: SecretStr | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> CIEnvironment:
        """Read the environment (``_env``). Token: ``GATE_GITHUB_TOKEN``, ``GITHUB_TOKEN``,
        ``GH_TOKEN``."""
        raw = actions_environ(environ)
        event: dict[str, Any] = {}
        event_path = Path(raw["event_path"]) if raw["event_path"] else None
        if event_path is not None:
            try:
                loaded = json.loads(event_path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise BadInput(f"{event_path}: GITHUB_EVENT_PATH points at no file") from None
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise BadInput(f"{event_path}: cannot read the event payload: {exc}") from None
            if not isinstance(loaded, dict):
                raise BadInput(f"{event_path}: the event payload is not a JSON object")
            event = loaded
        token, key = raw["token"], raw["model_credential"]
        return cls(
            event_name=raw["event_name"],
            event=event,
            repository=raw["repository"],
            api_url=(raw["api_url"] or "https://api.github.com").rstrip("/"),
            server_url=(raw["server_url"] or "https://github.com").rstrip("/"),
            run_id=raw["run_id"],
            run_attempt=raw["run_attempt"],
            sha=raw["sha"],
            ref=raw["ref"],
            base_ref=raw["base_ref"],
            actor=raw["actor"],
            step_summary=Path(raw["step_summary"]) if raw["step_summary"] else None,
            output=Path(raw["output"]) if raw["output"] else None,
            token=SecretStr(token) if token else None,
            model_credential=SecretStr(key) if key else None,
        )

    # ----- derived facts -------------------------------------------------------------------

    @property
    def secrets(self) -> list[str]:
        """The secret values, for masking (``::add-mask::``) and redaction."""
        return [s.get_secret_value() for s in (self.token, self.model_credential) if s]

    @property
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        url = f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        if self.run_attempt and self.run_attempt != "1":
            url += f"/attempts/{self.run_attempt}"
        return url

    @property
    def default_branch(self) -> str | None:
        repo = self.event.get("repository")
        if isinstance(repo, dict) and isinstance(repo.get("default_branch"), str):
            return str(repo["default_branch"])
        return None

    @property
    def branch(self) -> str | None:
        """The branch a push or dispatch ran on (``refs/heads/<name>``), else None."""
        prefix = "refs/heads/"
        return self.ref[len(prefix):] if self.ref.startswith(prefix) else None

    @property
    def pull_request(self) -> PullRequestInfo | None:
        """The PR of a ``pull_request`` event, from its payload."""
        pr = self.event.get("pull_request")
        if not isinstance(pr, dict):
            return None
        base = pr.get("base") or {}
        head = pr.get("head") or {}
        head_repo = head.get("repo") or {}
        labels = tuple(str(lb.get("name")) for lb in pr.get("labels") or []
                       if isinstance(lb, dict) and lb.get("name"))
        number = pr.get("number", self.event.get("number"))
        if not isinstance(number, int):
            raise BadInput("the pull_request event payload has no PR number")
        return PullRequestInfo(
            number=number,
            base_ref=str(base.get("ref") or self.base_ref or ""),
            head_ref=str(head.get("ref") or ""),
            head_sha=str(head.get("sha") or ""),
            head_repo=str(head_repo.get("full_name") or ""),
            labels=labels,
            html_url=str(pr.get("html_url") or ""),
        )

    @property
    def secrets_withheld(self) -> bool:
        """True when GitHub gives this PR run no secrets: a fork, or a Dependabot PR."""
        pr = self.pull_request
        if pr is None:
            return False
        is_fork = bool(pr.head_repo) and pr.head_repo.lower() != self.repository.lower()
        return is_fork or self.actor in _SECRETLESS_ACTORS

    @property
    def fork_repo(self) -> str | None:
        pr = self.pull_request
        if pr and pr.head_repo and pr.head_repo.lower() != self.repository.lower():
            return pr.head_repo
        return None


# ----- the few facts read before (or without) a whole CIEnvironment --------------------------
# Each reads one variable, here, so that ``GITHUB_*`` is read in this module only.
