"""The pieces behind one comment per suite: exact markers, the default comment id, and which
outcome each comment mode creates a comment for (the CLI tests are in test_ci_comments.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gate.ci import CIOverrides
from gate.ci._publish import creates
from gate.compare import judge
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import CISettings, GateSettings
from gate.errors import BadInput
from gate.github import MARKER, comment_body, comment_mode, find_comment, marker
from gate.github._comment import default_comment_id
from tests.helpers.fake_github import FakeGitHub, client

BOT = "github-actions[bot]"


def test_a_marker_matches_its_own_id_only() -> None:
    with FakeGitHub() as gh:
        ab = gh.add_comment(1, f"{marker('ab')}\nsuite ab", user=BOT)
        gh.add_comment(1, f"{MARKER}\nlegacy", user=BOT)
        c = client(gh)
        assert find_comment(c, 1, author=BOT, marker=marker("a")) is None
        assert find_comment(c, 1, author=BOT, marker=marker("ab"))["id"] == ab["id"]
        legacy = find_comment(c, 1, author=BOT, marker=marker("gate.toml"), legacy=True)
        assert legacy is not None and legacy["body"].endswith("legacy")
        # the exact id wins over the legacy comment, wherever it is
        mine = gh.add_comment(1, f"{marker('gate.toml')}\nnew", user=BOT)
        found = find_comment(c, 1, author=BOT, marker=marker("gate.toml"), legacy=True)
        assert found is not None and found["id"] == mine["id"]


def test_no_copy_of_any_marker_survives_in_a_body() -> None:
    text = f"a {marker('other')} b <!--agent-gate:comment id=x--> c {MARKER} d"
    body = comment_body(text, marker("mine"))
    assert body.startswith(marker("mine") + "\n")
    assert body.count("agent-gate:comment") == 1


@pytest.mark.parametrize(("config", "expected"), [
    (None, "gate.toml"), ("gate.toml", "gate.toml"), ("suites/fast.toml", "suites/fast.toml"),
    ("suites/my suite.toml", "suites/my-suite.toml"), ("../elsewhere/gate.toml", "gate.toml"),
])
def test_the_default_comment_id_is_the_config_path_in_the_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str | None,
        expected: str) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    assert default_comment_id(config, repo) == expected


def test_a_comment_id_that_could_break_the_marker_is_bad_input() -> None:
    for bad in ("a -->", "<b>", "", "x" * 101):
        if bad == "":
            assert CIOverrides(comment_id=bad).apply(CISettings()).comment_id == ""
            continue
        with pytest.raises(BadInput, match="comment_id"):
            CIOverrides(comment_id=bad).apply(CISettings())
    with pytest.raises(BadInput, match="comment_mode"):
        CIOverrides(comment_mode="sometimes").apply(CISettings())


def test_which_outcome_each_mode_creates_a_comment_for() -> None:
    rates = reference_rates(15)
    rng = np.random.default_rng(1)
    base = synthetic_results(rates, 20, rng)
    settings = GateSettings(block_on=["pass_rate"])
    same = judge(base, synthetic_results(rates, 5, rng), settings)
    worse = judge(base, synthetic_results([0.0] * 5 + rates[5:], 5, rng), settings)
    broken_base = synthetic_results([0.0] * 3 + rates[3:], 20, rng)
    fixed = judge(broken_base, synthetic_results([1.0] * 3 + rates[3:], 5, rng), settings)
    assert (same.verdict, worse.verdict, fixed.verdict) == ("pass", "regression", "pass")
    table = {mode: [creates(mode, c) for c in (same, fixed, worse)]
             + [creates(mode, None, failed=True)]
             for mode in ("always", "on-change", "on-regression", "never")}
    assert table == {
        "always": [True, True, True, True],
        "on-change": [False, True, True, True],
        "on-regression": [False, False, True, True],
        "never": [False, False, False, False],
    }
    assert comment_mode(CISettings(comment=False, comment_mode="always")) == "never"
