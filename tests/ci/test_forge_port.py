"""``gate ci``'s stages see the forge only through its port (gate/ci/_forge.py): a forge that
is not GitHub — an in-memory one, under an environment that is not Actions' (a GitLab-like
pipeline) — posts a fork's uploaded report and judges a regression its label accepts, with no
stage module changed. ``Context.make`` is the one place that names an adapter: the test swaps
it there, as a second forge's adapter would be chosen. ``mypy tests/ci/test_forge_port.py``
checks that these classes are the port's ``CIFacts``, ``Sink`` and ``Forge``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import SecretStr

import gate.ci._github
from gate.ci import CIOptions, run_ci
from gate.ci._context import Context
from gate.ci._event import Event
from gate.ci._forge import DataPush, DeferredComment, Forge, LabelSetter, Push
from gate.ci._judge import judge
from gate.ci._obtain import Obtained
from gate.ci._plan import Basis, make_plan, measured_by
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateConfig, load_config
from gate.core.results import load_results, write_results
from gate.errors import ForgeError, GateError
from gate.execution.run import RunRequest
from gate.secrets import Redactor
from tests.helpers.suites import judged_repo

TOKEN = "glpat-not-github-0123456789"
SERVER = "https://gitlab.example.invalid"


@dataclass(frozen=True)
class MergeRequest:
    number: int
    base_ref: str = "main"
    head_ref: str = "feature"
    head_sha: str = "c0ffee" * 6 + "c0ff"
    head_repo: str = "group/agent"
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class PipelineFacts:
    """A GitLab-like pipeline's facts, in the port's words."""

    event_name: str
    event: dict[str, Any] = field(default_factory=dict)
    repository: str = "group/agent"
    server_url: str = SERVER
    run_id: str = "4242"
    sha: str = "c0ffee" * 6 + "c0ff"
    ref: str = "refs/heads/feature"
    actor: str = "dev"
    token: SecretStr | None = field(default_factory=lambda: SecretStr(TOKEN))
    model_credential: SecretStr | None = None
    run_url: str | None = f"{SERVER}/group/agent/-/pipelines/4242"
    default_branch: str | None = "main"
    branch: str | None = "feature"
    pull_request: MergeRequest | None = None
    secrets_withheld: bool = False
    fork_repo: str | None = None

    @property
    def secrets(self) -> list[str]:
        return [self.token.get_secret_value()] if self.token else []


class Lines:
    """The job's sink: what it was told."""

    def __init__(self) -> None:
        self.outputs: dict[str, str] = {}
        self.said: list[tuple[str, str]] = []

    def add_mask(self, value: str) -> None:
        self.said.append(("mask", value))

    def error(self, message: str, title: str = "") -> None:
        self.said.append(("error", message))

    def warning(self, message: str, title: str = "") -> None:
        self.said.append(("warning", message))

    def notice(self, message: str, title: str = "") -> None:
        self.said.append(("notice", message))

    def set_outputs(self, values: Mapping[str, object]) -> None:
        self.outputs.update({k: "" if v is None else str(v) for k, v in values.items()})

    def summary(self, markdown: str) -> None:
        self.said.append(("summary", markdown))


@dataclass(frozen=True)
class Note:
    id: int
    url: str
    created: bool


@dataclass
class Thread:
    forge: MemoryForge
    number: int
    comment_id: str

    def post(self, markdown: str, *, create: bool) -> Note | None:
        key = (self.number, self.comment_id)
        existed = key in self.forge.comments
        if not (existed or create):
            return None
        self.forge.comments[key] = markdown
        return Note(1, f"{SERVER}/group/agent/-/merge_requests/{self.number}#note_1", not existed)


@dataclass
class MemoryForge:
    """A forge with no network: merge requests by their head, labels and who set them."""

    heads: dict[tuple[str, str, str], int] = field(default_factory=dict)
    label_list: list[str] = field(default_factory=list)
    setter: LabelSetter | ForgeError = field(
        default_factory=lambda: LabelSetter(None, "none", False))
    comments: dict[tuple[int, str], str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # the default branch's, by path
    closed: bool = False

    def changed_files(self, number: int) -> list[str]:
        return []

    def labels(self, number: int) -> list[str]:
        return list(self.label_list)

    def label_setter(self, number: int, label: str) -> LabelSetter:
        if isinstance(self.setter, ForgeError):
            raise self.setter
        return self.setter

    def find_change(self, head_repo: str, head_branch: str, head_sha: str) -> int | None:
        return self.heads.get((head_repo, head_branch, head_sha))

    def change_request(self, number: int, base_ref: str, head_ref: str,
                       head_sha: str) -> MergeRequest:
        return MergeRequest(number, base_ref, head_ref, head_sha)

    def comment(self, number: int, comment_id: str, mode: str, author: str) -> Thread:
        return Thread(self, number, comment_id)

    def defer_comment(self, comment: DeferredComment) -> Path:
        raise AssertionError("nothing is deferred here")

    def fetch_branch(self, root: Path, branch: str) -> str | None:
        return None

    def ensure_base_ref(self, root: Path, branch: str) -> str:
        return branch  # the test's repository has it locally

    def remote_ref(self, branch: str) -> str:
        return f"refs/remotes/origin/{branch}"

    def git_state(self, root: Path) -> str:
        return ""

    def push_data(self, push: DataPush, log: Any) -> Push:
        raise AssertionError("nothing is pushed here")

    def default_branch_file(self, path: str) -> str | None:
        return self.files.get(path)

    def can_ask(self) -> bool:
        return True

    def repository_public(self) -> tuple[bool, str]:
        return False, "private"  # nothing is published: the comment keeps the artifact's link

    def pages_site(self) -> None:
        return None

    def publish_files(self, files: Mapping[str, str], branch: str, message: str) -> str:
        raise AssertionError("nothing is published here")

    def run_artifact_url(self, run_id: str, name: str) -> str | None:
        return f"{SERVER}/group/agent/-/jobs/{run_id}/artifacts/browse" if run_id else None

    def close(self) -> None:
        self.closed = True


def _use(monkeypatch: pytest.MonkeyPatch, forge: MemoryForge) -> None:
    """The adapter chosen in Context.make: this forge, the test's sink."""
    port: Forge = forge  # the in-memory forge is a Forge (`mypy` on this file says so)
    monkeypatch.setattr(gate.ci._github, "connect",
                        lambda env, io, redact, log: (io, port))


def test_a_forge_that_is_not_github_posts_a_forks_uploaded_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comment job, whole (run_ci: event → comment): found by its head, defused, created
    because the fork's run failed, the run's report artifact linked (a private repository
    publishes no page); the forge closed at the end."""
    forge = MemoryForge(heads={("fork/agent", "feature", "abc123"): 7})
    _use(monkeypatch, forge)
    report = tmp_path / "gate-report.md"
    report.write_text("Regression, ping @maintainer <!-- agent-gate:comment id=x -->\n")
    facts = PipelineFacts("workflow_run", event={"workflow_run": {
        "id": 99, "event": "pull_request", "conclusion": "failure", "head_branch": "feature",
        "head_sha": "abc123", "head_repository": {"full_name": "fork/agent"}}})
    sink = Lines()
    opts = CIOptions(run=RunRequest(config=GateConfig(root=tmp_path)), mode="auto",
                     report_path=report, log=lambda _: None)
    assert run_ci(opts, facts, sink) == 0
    posted = forge.comments[(7, "gate.toml")]  # no gate.toml on the default branch
    assert posted.startswith("Regression, ping") and "@maintainer" not in posted
    assert "<!--" not in posted
    # not public: nothing published, the comment links the run's report artifact
    assert f"({SERVER}/group/agent/-/jobs/99/artifacts/browse)" in posted
    assert sink.outputs["pr_number"] == "7" and sink.outputs["comment_url"].endswith("#note_1")
    assert ("mask", TOKEN) in sink.said and forge.closed


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return judged_repo(tmp_path)


LABEL = "gate:accept-regression"


@pytest.mark.parametrize(("setter", "exit_code", "note"), [
    (LabelSetter("lead", "maintainer", True), 0, "Regression accepted** by **lead"),
    (LabelSetter("bot", "reporter", False), 1, "**ignored**"),
    (ForgeError("the forge would not say", 503), 1, "cannot tell who added it"),
])
def test_a_forge_that_is_not_github_says_who_set_the_accept_label(
    repo: Path, tmp_path: Path, setter: LabelSetter | ForgeError, exit_code: int, note: str
) -> None:
    """plan → judge on stored results that regress: the merge request's live labels and who
    set the accept label come from the forge; the policy decides."""
    results = tmp_path / "results.json"
    write_results(results, synthetic_results([0.0] * 15, 5, np.random.default_rng(11)))
    forge = MemoryForge(label_list=[LABEL], setter=setter)
    mr = MergeRequest(7)
    facts = PipelineFacts("pull_request", pull_request=mr)
    sink = Lines()
    req = RunRequest(config=load_config(repo / "gate.toml"), output=results)
    opts = CIOptions(run=req, rejudge=results, log=lambda _: None)
    ctx = Context(opts, facts, sink, Redactor(facts.secrets), forge)
    with measured_by(req, "main") as (ys, request):
        basis = Basis(ys, repo, ctx.opts.overrides.apply(ys.config.ci), request)
        plan = make_plan(ctx, Event("pr", "rejudge", mr, "main"), basis)
        assert plan.baseline is not None
        got = judge(ctx, plan, Obtained(load_results(results), plan.baseline))
    assert got.comparison.verdict == "regression"
    assert (got.exit_code, got.accepted) == (exit_code, exit_code == 0)
    assert note in got.markdown or any(note in text for _, text in sink.said), got.markdown


def test_the_comment_job_takes_its_settings_from_the_default_branch_never_its_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No checkout: [ci] is the default branch's gate.toml, read through the forge, and a
    gate.toml in the workspace (where a careless workflow downloads a fork's artifact) is not
    read: it cannot choose the comment, or the branch the job's write token publishes to."""
    forge = MemoryForge(heads={("fork/agent", "feature", "abc123"): 7},
                        files={"gate.toml": '[ci]\ncomment_id = "agent"\n'
                                            'comment_mode = "always"\n'})
    _use(monkeypatch, forge)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate.toml").write_text('[ci]\ncomment_id = "hijack"\ndata_branch = "main"\n')
    report = tmp_path / "gate-report.md"
    report.write_text("No regression.\n")
    facts = PipelineFacts("workflow_run", event={"workflow_run": {
        "id": 99, "event": "pull_request", "conclusion": "success", "head_branch": "feature",
        "head_sha": "abc123", "head_repository": {"full_name": "fork/agent"}}})
    opts = CIOptions(run=RunRequest(config=GateConfig(root=tmp_path)), mode="auto",
                     report_path=report, log=lambda _: None)
    assert run_ci(opts, facts, Lines()) == 0
    # created on a passing run: the default branch's comment_mode ("always"), under its id
    assert list(forge.comments) == [(7, "agent")]
    # a malformed [ci] on the default branch is bad input, named
    forge.files["gate.toml"] = '[ci]\ncomment_mode = "sometimes"\n'
    sink = Lines()
    with pytest.raises(GateError) as err:
        run_ci(opts, facts, sink)
    assert err.value.exit_code == 2 and "gate.toml (the default branch's)" in str(err.value)
