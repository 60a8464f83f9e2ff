"""The policy stage of ``gate ci`` (gate/ci/_policy.py), as tables: what the job exits with
for each verdict and setting, and how many infra errors a refresh tolerates. And the whole
pipeline called in-process as a library (``run_ci`` with a ``CIEnvironment`` built from a
dict), the way the stages are meant to be driven."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.ci import CIOptions, check_infra, outcome, run_ci
from gate.compare import Comparison
from gate.core.config import GateConfig
from gate.core.results import Results, Summary
from gate.errors import BadInput, Unmeasurable
from gate.execution.run import RunRequest
from gate.github import ActionsIO, CIEnvironment


def comparison(verdict: str) -> Comparison:
    code = {"pass": 0, "regression": 1, "inconclusive": 3}[verdict]
    return Comparison.model_construct(verdict=verdict, exit_code=code)


@pytest.mark.parametrize(
    ("verdict", "accepted", "fail", "label", "on_pr", "code", "note"), [
        ("pass", False, True, "ok", True, 0, None),
        ("inconclusive", False, True, "ok", True, 3, None),
        ("inconclusive", False, False, "ok", True, 3, None),  # exit 3 is never turned off
        ("regression", False, True, "ok", True, 1, "ok"),  # says how to accept
        ("regression", False, True, "", True, 1, None),  # no label configured: nothing to say
        ("regression", False, True, "ok", False, 1, None),  # a branch: no PR to label
        ("regression", True, True, "ok", True, 0, None),  # accepted: reported, not blocking
        ("regression", False, False, "ok", True, 0, "reported, not blocking"),
    ])
def test_the_exit_code_of_a_verdict(verdict: str, accepted: bool, fail: bool, label: str,
                                    on_pr: bool, code: int, note: str | None) -> None:
    got = outcome(comparison(verdict), accepted=accepted, fail_on_regression=fail,
                  accept_label=label, on_pr=on_pr, label_code=label)
    assert got.exit_code == code and got.accepted == (accepted and verdict == "regression")
    if note is None:
        assert got.note is None
    else:
        assert got.note is not None and note in got.note


def results(total: int, errors: int) -> Results:
    summary = Summary.model_construct(total=total, errors=errors)
    return Results.model_construct(summary=summary)


@pytest.mark.parametrize(("total", "errors", "refused"), [
    (10, 0, None), (8, 2, None),  # 20 %: at the limit, pooled
    (7, 3, "30% of this refresh's runs were infra errors (limit 20%)"),
    (0, 4, "every run of this refresh was an infra error"),
    (0, 0, "every run of this refresh was an infra error"),
])
def test_how_many_infra_errors_a_refresh_tolerates(total: int, errors: int,
                                                   refused: str | None) -> None:
    if refused is None:
        check_infra(results(total, errors), 0.2, refresh=True)
    else:
        with pytest.raises(Unmeasurable) as exc:
            check_infra(results(total, errors), 0.2, refresh=True)
        assert refused in str(exc.value) and "not refreshed" in str(exc.value)


def test_run_ci_as_a_library_reports_a_refusal_everywhere(tmp_path: Path) -> None:
    """A ``pull_request_target`` run is refused by the event stage: the error annotation,
    the step summary and the outputs say so, and the exception carries the exit code."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3, "base": {"ref": "main"}}}))
    env = CIEnvironment.from_environ({
        "GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/agent", "GITHUB_TOKEN": "ghs_secret_token_12345678",
    })
    lines: list[str] = []

    class Stream:
        def write(self, text: str) -> int:
            lines.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    io = ActionsIO(tmp_path / "out", tmp_path / "summary.md", stream=Stream())  # type: ignore[arg-type]
    opts = CIOptions(run=RunRequest(config=GateConfig(root=tmp_path)),
                     report_path=tmp_path / "report.md", log=lines.append)
    with pytest.raises(BadInput, match="refuses pull_request_target") as exc:
        run_ci(opts, env, io)
    assert exc.value.exit_code == 2
    shown = "".join(lines)
    assert "::add-mask::ghs_secret_token_12345678" in shown
    assert "::error title=agent-gate%3A error::gate ci refuses pull_request_target" in shown
    assert "refuses pull\\_request\\_target" in (tmp_path / "summary.md").read_text()
    outputs = (tmp_path / "out").read_text()
    assert "verdict" in outputs and "error" in outputs and "mode" in outputs
