"""gate.github's pieces against a real HTTP fake on loopback: REST retries and errors, the
sticky comment across pages, outputs and annotations, the environment, the history."""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pytest

from gate.core.history import HistoryEntry, append_history, parse_history
from gate.errors import BadInput
from gate.github import (
    MARKER,
    ActionsIO,
    CIEnvironment,
    GitHubClient,
    GitHubError,
    comment_body,
    upsert_comment,
)
from gate.github._comment import (
    MAX_BODY,
    find_pr_for_run,
    label_added_by,
    pr_files,
    pr_labels,
    token_login,
    user_permission,
)
from gate.report import trend_markdown
from tests.helpers.ci import _parse_output_file
from tests.helpers.fake_github import FakeGitHub, client

TOKEN = "ghs_supersecrettoken123456"
BOT = "github-actions[bot]"


@pytest.fixture
def gh() -> FakeGitHub:
    with FakeGitHub(token=TOKEN) as fake:
        yield fake


# ----- REST ---------------------------------------------------------------------------------

def test_5xx_is_retried_with_backoff(gh: FakeGitHub) -> None:
    gh.fail_next("GET", "/comments", 502, times=2)
    c = client(gh)
    assert upsert_comment(c, 7, "hello", author=BOT).created
    assert c.sleeps == [1.0, 2.0]  # type: ignore[attr-defined]
    assert len(gh.calls("GET", "/comments")) == 3


def test_5xx_gives_up_after_max_retries(gh: FakeGitHub) -> None:
    gh.fail_next("GET", "/comments", 503, times=10)
    with pytest.raises(GitHubError, match=r"HTTP 503"):
        upsert_comment(client(gh, max_retries=2), 7, "hello", author=BOT)
    assert len(gh.calls("GET", "/comments")) == 3


def test_secondary_rate_limit_retry_after_is_honoured(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 403, headers={"retry-after": "3"},
                 body={"message": "You have exceeded a secondary rate limit."})
    c = client(gh)
    assert upsert_comment(c, 7, "hi", author=BOT).created
    assert c.sleeps == [3.0]  # type: ignore[attr-defined]


def test_rate_limit_remaining_zero_waits_until_reset(gh: FakeGitHub) -> None:
    reset = int(time.time()) + 5
    gh.fail_next("GET", "/comments", 429, headers={"x-ratelimit-remaining": "0",
                                                   "x-ratelimit-reset": str(reset)})
    c = client(gh)
    upsert_comment(c, 7, "hi", author=BOT)
    (wait,) = c.sleeps  # type: ignore[attr-defined]
    assert 3 <= wait <= 7


def test_secondary_limit_without_hint_waits_a_minute(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 403, body={"message": "secondary rate limit"})
    c = client(gh)
    upsert_comment(c, 7, "hi", author=BOT)
    assert c.sleeps == [60.0]  # type: ignore[attr-defined]


def test_rate_limit_reset_too_far_fails_clearly(gh: FakeGitHub) -> None:
    gh.fail_next("GET", "/comments", 403, headers={
        "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)},
        body={"message": "API rate limit exceeded"})
    with pytest.raises(GitHubError, match="rate limit"):
        upsert_comment(client(gh), 7, "hi", author=BOT)


def test_401_says_the_token_is_bad(gh: FakeGitHub) -> None:
    c = GitHubClient(gh.url, gh.repo, "ghs_wrong_token_0000000", sleep=lambda s: None)
    with pytest.raises(GitHubError, match=r"rejected the token \(401\)") as exc:
        upsert_comment(c, 7, "hi", author=BOT)
    assert "ghs_wrong" not in str(exc.value)


def test_403_says_which_permission_is_missing(gh: FakeGitHub) -> None:
    gh.fail_next("POST", "/comments", 403,
                 body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError) as exc:
        upsert_comment(client(gh), 7, "hi", author=BOT)
    msg = str(exc.value)
    assert "cannot write comments" in msg
    assert "add `pull-requests: write` to the workflow's `permissions:`" in msg
    assert exc.value.exit_code == 2


def test_404_is_clear(gh: FakeGitHub) -> None:
    c = GitHubClient(gh.url, "acme/nope", TOKEN, sleep=lambda s: None)
    with pytest.raises(GitHubError, match=r"404 .*does not exist, or the token cannot see it"):
        upsert_comment(c, 7, "hi", author=BOT)


def test_connection_refused_is_retried_then_clear() -> None:
    sleeps: list[float] = []
    c = GitHubClient("http://127.0.0.1:9", "a/b", TOKEN, max_retries=2, sleep=sleeps.append)
    with pytest.raises(GitHubError, match="cannot reach the GitHub API"):
        upsert_comment(c, 1, "x", author=BOT)
    assert sleeps == [1.0, 2.0]


def test_token_never_in_repr() -> None:
    c = GitHubClient("http://127.0.0.1:9", "a/b", TOKEN)
    assert TOKEN not in repr(c)
    env = CIEnvironment.from_environ({"GITHUB_TOKEN": TOKEN,
                                      "ANTHROPIC_API_KEY": "sk-ant-xyz123456"})
    assert TOKEN not in repr(env) and "sk-ant" not in repr(env)
    assert TOKEN not in str(env.model_dump())
    assert env.secrets == [TOKEN, "sk-ant-xyz123456"]


# ----- the sticky comment -------------------------------------------------------------------

def test_creates_then_updates_one_comment(gh: FakeGitHub) -> None:
    c = client(gh)
    first = upsert_comment(c, 7, "report v1", author=BOT)
    second = upsert_comment(c, 7, "report v2", author=BOT)
    assert first.created and not second.created and first.id == second.id
    assert len(gh.comments[7]) == 1
    assert gh.comments[7][0]["body"] == f"{MARKER}\nreport v2"


def test_finds_the_marker_comment_on_a_later_page(gh: FakeGitHub) -> None:
    for i in range(130):
        gh.add_comment(7, f"chatter {i}")
    mine = gh.add_comment(7, f"{MARKER}\nold report", user="github-actions[bot]")
    for i in range(120):
        gh.add_comment(7, f"more chatter {i}")
    ref = upsert_comment(client(gh), 7, "new report", author=BOT)
    assert not ref.created and ref.id == mine["id"]
    assert len(gh.comments[7]) == 251
    pages = [r.query.get("page", ["1"])[0] for r in gh.calls("GET", "/comments")]
    assert pages == ["1", "2"]  # stopped at the page that had it, followed rel=next


def test_a_marker_comment_someone_else_wrote_is_never_edited(gh: FakeGitHub) -> None:
    """Anyone can paste the marker: only the token's own comment is the gate's."""
    planted = gh.add_comment(7, f"{MARKER}\nplease edit me", user="mallory")
    c = client(gh)
    first = upsert_comment(c, 7, "report v1", author=BOT)
    assert first.created and first.id != planted["id"]
    second = upsert_comment(c, 7, "report v2", author=BOT)
    assert not second.created and second.id == first.id
    assert planted["body"] == f"{MARKER}\nplease edit me"
    assert not gh.calls("PATCH", f"/issues/comments/{planted['id']}")
    assert [x["user"]["login"] for x in gh.comments[7]] == ["mallory", BOT]


def test_the_fake_refuses_what_github_refuses(gh: FakeGitHub) -> None:
    """Editing another identity's comment, writing with a read-only token, GET /user with an
    installation token: 403 "Resource not accessible by integration", as GitHub answers."""
    theirs = gh.add_comment(7, "hello", user="mallory")
    c = client(gh)
    for method, path in (("PATCH", c.repo_path(f"issues/comments/{theirs['id']}")),
                         ("GET", "/user")):
        with pytest.raises(GitHubError, match="Resource not accessible by integration") as e:
            c.request(method, path, json={"body": "x"}, what="try")
        assert e.value.status == 403
    gh.add_token("ghs_readonly_token_0000001", BOT, installation=True, write=False)
    ro = GitHubClient(gh.url, gh.repo, "ghs_readonly_token_0000001", sleep=lambda s: None)
    with pytest.raises(GitHubError, match=r"cannot write comments on PR #7 \(403\)") as e:
        upsert_comment(ro, 7, "hi", author=BOT)
    assert "read-only token" in str(e.value) and "Dependabot" in str(e.value)
    assert pr_labels(ro, 7) == []  # reading still works


def test_token_identity_is_inferred_or_configured(gh: FakeGitHub) -> None:
    # the Actions token: GitHub refuses it GET /user, so it is never asked
    assert token_login(client(gh)) == (BOT, "an installation token: the Actions token")
    assert not gh.calls("GET", "^/user$")
    # a personal access token is asked
    gh.add_token("ghp_alicesPAT_00000000000", "alice", installation=False)
    pat = GitHubClient(gh.url, gh.repo, "ghp_alicesPAT_00000000000", sleep=lambda s: None)
    assert token_login(pat) == ("alice", "GET /user")
    # an integration token of a format we do not know: GitHub says 403, taken as Actions'
    gh.add_token("v2_app_token_0000000000", "some-app[bot]", installation=True)
    odd = GitHubClient(gh.url, gh.repo, "v2_app_token_0000000000", sleep=lambda s: None)
    assert token_login(odd)[0] == BOT
    # configured wins, with no call at all
    calls = len(gh.requests)
    assert token_login(odd, "some-app[bot]")[0] == "some-app[bot]"
    assert len(gh.requests) == calls
    # and the PAT's comment is its own, not the bot's
    gh.add_comment(7, f"{MARKER}\nthe bot's", user=BOT)
    ref = upsert_comment(pat, 7, "alice's report", author="alice")
    assert ref.created and gh.comments[7][-1]["user"]["login"] == "alice"


def test_who_added_a_label_and_their_permission(gh: FakeGitHub) -> None:
    gh.collaborators.update({"alice": "maintain", "tri": "triage"})
    gh.label(7, "gate:accept-regression", by="alice")
    gh.unlabel(7, "gate:accept-regression", by="alice")
    gh.label(7, "other", by="alice")
    for i in range(120):  # the latest event is on page 2
        gh.label(7, f"noise-{i}", by="alice")
    gh.label(7, "Gate:Accept-Regression", by="bob")
    c = client(gh)
    assert label_added_by(c, 7, "gate:accept-regression") == "bob"
    assert label_added_by(c, 7, "missing") is None
    assert user_permission(c, "alice") == ("maintain", True)
    assert user_permission(c, "tri") == ("triage", False)
    assert user_permission(c, "bob") == ("read", False)
    assert user_permission(c, "dependabot[bot]") == ("none", False)


def test_marker_inside_untrusted_text_is_removed_and_body_is_capped() -> None:
    body = comment_body(f"evil {MARKER} text " + "x" * 70_000)
    assert body.count(MARKER) == 1 and body.startswith(MARKER)
    assert len(body) <= MAX_BODY and "cut to fit" in body


def test_labels_files_and_pr_lookup(gh: FakeGitHub) -> None:
    gh.labels[7] = ["bug", "gate:accept-regression"]
    gh.files[7] = [f"src/f{i}.py" for i in range(150)] + ["baseline.json"]
    gh.pulls = [{"number": 7, "head": {"sha": "abc"}, "_head": "forker:feature"},
                {"number": 8, "head": {"sha": "def"}, "_head": "forker:other"}]
    c = client(gh)
    assert pr_labels(c, 7) == ["bug", "gate:accept-regression"]
    assert "baseline.json" in pr_files(c, 7)
    assert find_pr_for_run(c, "forker/agent", "feature", "abc") == 7
    assert find_pr_for_run(c, "forker/agent", "feature", "zzz") is None


# ----- outputs and annotations --------------------------------------------------------------

def test_outputs_are_multiline_safe(tmp_path: Path) -> None:
    out = tmp_path / "out"
    aio = ActionsIO(out, None, stream=io.StringIO())
    aio.set_outputs({"headline": "line one\nline two", "pass_rate": 0.8, "none": None})
    text = out.read_text()
    parsed = _parse_output_file(text)
    assert parsed == {"headline": "line one\nline two", "pass_rate": "0.8", "none": ""}


def test_annotations_are_escaped_and_redacted() -> None:
    stream = io.StringIO()
    aio = ActionsIO(None, None, stream=stream, redact=lambda s: s.replace(TOKEN, "***"))
    aio.add_mask(TOKEN)
    aio.error(f"bad 100%\nnext line ::warning::x {TOKEN}", title="agent-gate: a, b")
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"::add-mask::{TOKEN}"
    assert lines[1] == ("::error title=agent-gate%3A a%2C b::bad 100%25%0Anext line "
                        "::warning::x ***")
    assert len(lines) == 2


def test_step_summary_appends(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    aio = ActionsIO(None, summary, stream=io.StringIO())
    aio.summary("# one")
    aio.summary("# two")
    assert summary.read_text() == "# one\n\n# two\n\n"


# ----- environment --------------------------------------------------------------------------

def test_environment_reads_the_pull_request(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({
        "number": 7,
        "pull_request": {"number": 7, "base": {"ref": "main"},
                         "head": {"ref": "feat", "sha": "abc", "repo": {"full_name": "x/agent"}},
                         "labels": [{"name": "gate:accept-regression"}]},
        "repository": {"default_branch": "main"},
    }))
    env = CIEnvironment.from_environ({
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/agent", "GITHUB_RUN_ID": "9", "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_SERVER_URL": "https://github.example/", "GITHUB_REF": "refs/pull/7/merge",
    })
    pr = env.pull_request
    assert pr is not None and pr.number == 7 and pr.base_ref == "main"
    assert pr.labels == ("gate:accept-regression",)
    assert env.fork_repo == "x/agent" and env.secrets_withheld
    assert env.run_url == "https://github.example/acme/agent/actions/runs/9/attempts/2"
    assert env.default_branch == "main" and env.branch is None


def test_dependabot_prs_have_no_secrets(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {
        "number": 3, "base": {"ref": "main"}, "head": {"repo": {"full_name": "acme/agent"}}}}))
    env = CIEnvironment.from_environ({"GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY":
                                      "acme/agent", "GITHUB_ACTOR": "dependabot[bot]"})
    assert env.fork_repo is None and env.secrets_withheld


def test_bad_event_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="GITHUB_EVENT_PATH points at no file"):
        CIEnvironment.from_environ({"GITHUB_EVENT_PATH": str(tmp_path / "missing.json")})
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(BadInput, match="not a JSON object"):
        CIEnvironment.from_environ({"GITHUB_EVENT_PATH": str(tmp_path / "bad.json")})


# ----- history ------------------------------------------------------------------------------

def test_history_appends_keeps_newest_and_draws_a_trend(tmp_path: Path) -> None:
    path = tmp_path / "gate-history.jsonl"
    for i in range(6):
        append_history(path, HistoryEntry(created_at=f"2026-11-{i + 1:02d}", commit=f"{i}" * 40,
                                          fingerprint="fp", pass_rate=0.5 + i / 20, passed=i,
                                          total=10), keep=4)
    entries = parse_history(path.read_text())
    assert [e.commit[0] for e in entries if e.commit] == ["2", "3", "4", "5"]
    path.write_text(path.read_text() + "not json\n")
    assert len(parse_history(path.read_text())) == 4
    trend = trend_markdown(entries)
    assert trend is not None and trend.startswith("```mermaid\nxychart-beta")
    assert "line [60, 65, 70, 75]" in trend
    assert trend_markdown(entries[:1]) is None
    # a new fingerprint starts a new line: the old agent's runs are not drawn
    other = [*entries, HistoryEntry(created_at="x", fingerprint="new", pass_rate=0.1)]
    assert trend_markdown(other) is None


# ----- the documented accept flow -----------------------------------------------------------

def test_no_documented_pr_check_can_be_skipped_or_cancelled_by_a_label() -> None:
    """A label event must never start the required check: with labeled/unlabeled triggers,
    any label cancels the running gate (cancel-in-progress) and a job-level `if:` then leaves
    a skipped job, which a required check counts as a success."""
    import yaml

    from tests.helpers.action import ROOT, _doc_blocks, _triggers

    workflows = [yaml.safe_load(b) for doc in ("docs/github.md", "README.md")
                 for b in _doc_blocks("yaml", doc)]
    workflows += [yaml.safe_load(p.read_text())
                  for p in (ROOT / ".github" / "workflows").glob("*.yml")]
    checks = [w for w in workflows if isinstance(w, dict) and "jobs" in w
              and "pull_request" in _triggers(w)]
    assert len(checks) >= 4  # docs: the PR check and the fork pair's half; README; this repo
    for wf in checks:
        types = (_triggers(wf)["pull_request"] or {}).get("types",
                                                         ["opened", "synchronize", "reopened"])
        assert not {"labeled", "unlabeled"} & set(types), wf["name"]
        for name, job in wf["jobs"].items():
            # only a guard on the event's name, which no label changes: this repository's
            # own workflow runs its `pr` job on pull_request and its `main` job on push
            guard = str(job.get("if", "github.event_name == 'pull_request'"))
            assert re.fullmatch(r"github\.event_name == '(pull_request|push)'", guard), \
                f"{wf['name']}: job {name} can be skipped"
    text = (ROOT / "docs" / "github.md").read_text()
    assert "### Accepting a known regression" in text and "write permission" in text
