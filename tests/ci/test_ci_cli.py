"""``gate ci``'s options: the same GATE_* variables as ``gate run``, and the action's empty
inputs mean "not set" (gate.toml decides), never "false"."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import SecretStr

import gate.cli._ci as cli
from gate.ci import CIOptions, CIOverrides
from gate.core.config import CISettings
from gate.errors import BadInput
from gate.github._git import _auth_env
from tests.helpers.process import user_env


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[CIOptions]:
    seen: list[CIOptions] = []

    def fake(opts: CIOptions, env: object = None) -> int:
        seen.append(opts)
        return 0

    monkeypatch.setattr(cli, "run_ci", fake)
    return seen


def test_env_values_reach_the_options(captured: list[CIOptions], tmp_path: object) -> None:
    env = {"GATE_COMMENT": "false", "GATE_FAIL_ON_REGRESSION": "true", "GATE_SIM": "true",
           "GATE_REPLICATIONS": "2", "GATE_MODE": "pr", "GATE_ACCEPT_LABEL": "ok-slower",
           "GATE_FORK_WITHOUT_KEY": "skip",
           "GATE_REPORT": "r.md", "GATE_OUTPUT": "res.json", "GATE_COMMENT_ID": "model-b",
           "GATE_COMMENT_MODE": "on-change", "GATE_REJUDGE": "true"}
    r = CliRunner().invoke(cli.ci, [], env=env)
    assert r.exit_code == 0, r.output
    (o,) = captured
    assert o.mode == "pr" and o.run.sim and o.run.replications == 2
    assert str(o.run.output) == "res.json" and str(o.report_path) == "r.md"
    ov = o.overrides
    assert (ov.comment, ov.fail_on_regression, ov.accept_label,
            ov.fork_without_key) == (False, True, "ok-slower", "skip")
    assert (ov.comment_id, ov.comment_mode) == ("model-b", "on-change")
    assert o.rejudge == Path("res.json")  # `rejudge: true` judges the results file


def test_empty_inputs_leave_gate_toml_in_charge(captured: list[CIOptions]) -> None:
    env = {k: "" for k in ("GATE_COMMENT", "GATE_FAIL_ON_REGRESSION", "GATE_SIM",
                           "GATE_REPLICATIONS", "GATE_ACCEPT_LABEL", "GATE_MODE",
                           "GATE_OUTPUT", "GATE_COMMENT_ID",
                           "GATE_COMMENT_MODE", "GATE_REJUDGE")}
    assert CliRunner().invoke(cli.ci, [], env=env).exit_code == 0
    (o,) = captured
    assert o.mode == "auto" and not o.run.sim and str(o.run.output) == "results.json"
    assert o.overrides == CIOverrides()
    assert o.rejudge is None and o.default_comment_id == "gate.toml"
    merged = o.overrides.apply(CISettings(comment=False, baseline_refresh="commit"))
    assert merged.comment is False and merged.baseline_refresh == "commit"


def test_flags_override_the_file(captured: list[CIOptions]) -> None:
    CliRunner().invoke(cli.ci, ["--no-comment", "--no-fail", "--accept-label", "x"], env={})
    merged = captured[0].overrides.apply(CISettings())
    assert not merged.comment and not merged.fail_on_regression and merged.accept_label == "x"


def test_bad_override_is_one_clear_error() -> None:
    with pytest.raises(BadInput, match="comment_mode"):
        CIOverrides(comment_mode="sometimes").apply(CISettings())


def test_where_the_baselines_live_has_no_flag_and_no_input() -> None:
    """``[ci] baseline_refresh``, ``data_branch`` and ``history`` are gate.toml's alone: main's
    refresh writes where its gate.toml says and a PR reads where the base's says, so no input
    of one workflow can send the baseline where the other never looks."""
    for flag in ("--baseline-refresh", "--data-branch", "--history"):
        r = CliRunner().invoke(cli.ci, [flag, "branch"], env={})
        assert r.exit_code == 2 and "No such option" in r.output, r.output
    assert not {"baseline_refresh", "data_branch", "history"} & {
        f.name for f in dataclasses.fields(CIOverrides)}


def test_push_token_goes_through_no_env_and_no_argv() -> None:
    """git's configuration for the token names a helper and a pipe: the token itself is in no
    ``GIT_CONFIG_*`` value and on no command line; the helper reads it from the pipe."""
    env = _auth_env("https://github.com/", 9)
    assert env["GIT_CONFIG_COUNT"] == "3"
    key = "http.https://github.com/.extraheader"
    assert env["GIT_CONFIG_KEY_0"] == key and env["GIT_CONFIG_VALUE_0"] == ""  # reset first
    helper = "credential.https://github.com/.helper"
    assert env["GIT_CONFIG_KEY_1"] == helper and env["GIT_CONFIG_VALUE_1"] == ""
    assert env["GIT_CONFIG_KEY_2"] == helper and "/dev/fd/9" in env["GIT_CONFIG_VALUE_2"]
    r, w = os.pipe()
    os.write(w, b"ghs_tok_123456789\n")
    os.close(w)
    try:
        got = subprocess.run(["git", "credential", "fill"], input="url=https://github.com/a/b\n\n",
                             capture_output=True, text=True, pass_fds=(r,), check=False,
                             env={**user_env(), "GIT_TERMINAL_PROMPT": "0",
                                  **_auth_env("https://github.com/", r)})
    finally:
        os.close(r)
    assert got.returncode == 0, got.stderr
    assert "username=x-access-token\npassword=ghs_tok_123456789\n" in got.stdout


def test_outside_actions_it_says_what_to_run_instead(tmp_path: object) -> None:
    from gate.cli import main

    env = {"GITHUB_EVENT_NAME": "", "GITHUB_EVENT_PATH": "", "GITHUB_OUTPUT": "",
           "GITHUB_STEP_SUMMARY": "", "GITHUB_TOKEN": "", "GATE_GITHUB_TOKEN": ""}
    r = CliRunner().invoke(main, ["ci"], env=env)
    assert r.exit_code == 2
    assert "gate ci runs inside GitHub Actions" in r.output
    assert "gate run" in r.output and "Traceback" not in r.output


def test_a_secret_in_an_error_is_redacted_everywhere(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """e.g. git echoing a remote URL with credentials in it."""
    import io

    import gate.ci._jobs
    from gate.ci import run_ci
    from gate.core.config import GateConfig
    from gate.execution.run import RunRequest
    from gate.github import ActionsIO, CIEnvironment

    token = "ghs_leaky_token_1234567890"

    def boom(*args: object) -> int:
        raise BadInput(f"cannot push to https://x-access-token:{token}@github.com/a/b")

    monkeypatch.setattr(gate.ci._jobs, "refresh_plan", boom)
    env = CIEnvironment(token=SecretStr(token), event_name="push", ref="refs/heads/main")
    stream = io.StringIO()
    aio = ActionsIO(tmp_path / "out", tmp_path / "summary", stream=stream,
                    redact=lambda s: s.replace(token, "[REDACTED]"))
    opts = CIOptions(run=RunRequest(config=GateConfig(root=tmp_path)), mode="main")
    with pytest.raises(BadInput) as exc:
        run_ci(opts, env, aio)
    assert token not in str(exc.value) and "[REDACTED]" in str(exc.value)
    shown = stream.getvalue().replace(f"::add-mask::{token}", "")
    assert token not in shown + (tmp_path / "out").read_text() + (tmp_path / "summary").read_text()
