"""What one ``gate ci`` invocation is asked to do: the CLI's (or a test's) options, frozen.

``CIOverrides`` are the CLI/env values that override ``[ci]`` in gate.toml; ``CIOptions`` the
rest. Where the baselines live (``baseline_refresh``, ``data_branch``, ``history``) has no
override: main's refresh writes where gate.toml says and a pull request reads where its base
branch's gate.toml says, so the two can never disagree. Nothing downstream changes them: a
stage that needs another request (the base branch's config, a seeded simulator) makes a new
value.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from gate._files import describe_validation_error
from gate.core.config import DEFAULT_COMMENT_ID, CISettings
from gate.core.results import Results, RunResult
from gate.errors import BadInput
from gate.execution.run import RunRequest


@dataclass(frozen=True)
class CIOverrides:
    """CLI/env values that override ``[ci]`` in gate.toml; None keeps the file's value."""

    comment: bool | None = None
    fail_on_regression: bool | None = None
    accept_label: str | None = None
    fork_without_key: str | None = None
    comment_author: str | None = None
    comment_id: str | None = None
    comment_mode: str | None = None

    def apply(self, base: CISettings) -> CISettings:
        update = {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
        try:
            return CISettings.model_validate({**base.model_dump(), **update})
        except ValidationError as exc:
            raise BadInput(f"gate ci: {describe_validation_error(exc)}") from None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True)
class CIOptions:
    run: RunRequest
    mode: str = "auto"
    overrides: CIOverrides = field(default_factory=CIOverrides)
    report_path: Path = Path("gate-report.md")
    # the comment id when neither the input nor [ci] names one: from the config path
    default_comment_id: str = DEFAULT_COMMENT_ID
    # the config's path in the repository: comment mode (no checkout) reads the [ci] table of
    # the default branch's copy through the forge (gate/ci/_comment.py)
    config_repo_path: str = "gate.toml"
    # judge these stored results (a run's artifact) instead of running the suite
    rejudge: Path | None = None
    # a matrix's judge job: the directory of the shards' downloaded results, merged into
    # ``run.output`` and judged (pr/check) or pooled (main) instead of running the suite
    merge: Path | None = None
    # the HTML report of a judged run (gate/report/_html.py); None: none
    html_report: Path | None = None
    # the action's comment is posted by a later step, after the report's upload: the final
    # comment goes to a file (the forge's ``defer_comment``) instead of to the forge
    defer_comment: bool = False
    # comment mode, a PR of the repository itself: "post" the uploaded report (its job posted
    # nothing), or "link" the comment its job posted to the published page (gate/ci/_relink.py)
    same_repo: str = "post"
    on_result: Callable[[RunResult], None] | None = None
    on_start: Callable[[Results, int], None] | None = None  # before the first run (its plan)
    log: Callable[[str], None] = _stderr

    @property
    def output(self) -> Path:
        """The results file: the stored one on a re-judge, else the run's."""
        return self.rejudge if self.rejudge is not None else self.run.output
