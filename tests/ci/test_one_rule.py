"""One place per rule: "stopped by the budget → exit 3" and "too many infra errors → exit 3"
are each decided by one function of gate.ci's policy (gate/ci/_policy.py), which ``gate run``
(plain and ``--ab``) and ``gate ci`` (judge, refresh) call; the infra rate and its limit are
compare's (gate/compare/_infra.py), which the policy and ``compare`` both use.

Checked twice: from the source (the rule's words and its comparison appear once), and through
``gate run`` in-process (its messages are the policy function's, word for word).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.ci import check_budget, check_infra
from gate.cli import main
from gate.compare import infra_count, over_infra_limit
from gate.core.results import Interruption, MissingRun, Results, RunResult, new_results
from gate.errors import Unmeasurable
from tests.helpers.suites import tiny_suite

GATE = Path(__file__).resolve().parents[2] / "gate"
POLICY = GATE / "ci" / "_policy.py"
INFRA = GATE / "compare" / "_infra.py"


def _tree(path: Path) -> ast.Module:
    """A module without its docstrings (comments are gone with the parse)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            body[0] = ast.Pass()
    return tree


def _strings(path: Path) -> str:
    """Every string constant of a module's code (f-strings' literal parts too), joined."""
    return "\n".join(n.value for n in ast.walk(_tree(path))
                     if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _code(path: Path) -> str:
    return ast.unparse(_tree(path))


@pytest.mark.parametrize("words", ["stopped by the budget", "were infra errors",
                                   "was an infra error"])
def test_the_exit_3_messages_are_written_in_one_module(words: str) -> None:
    """A second copy of the budget or infra rule would need its own message."""
    where = [p.relative_to(GATE.parent).as_posix() for p in sorted(GATE.rglob("*.py"))
             if words in _strings(p) and p != POLICY]
    assert where == [], f"{words!r} outside gate/ci/_policy.py: {where}"


def test_the_infra_limit_is_compared_in_one_function() -> None:
    """``rate > max`` (or ``errors / runs``) of infra errors: only compare's _infra.py."""
    pattern = re.compile(r">=?\s*[\w.]*max_(infra_)?rate\b|max_(infra_)?rate\s*<|"
                         r"errors\s*/\s*[\w.()]*runs")
    where = [p.relative_to(GATE.parent).as_posix() for p in sorted(GATE.rglob("*.py"))
             if pattern.search(_code(p)) and p != INFRA]
    assert where == [], f"the infra limit compared outside gate/compare/_infra.py: {where}"
    assert over_infra_limit(0.2, 0.2) is False and over_infra_limit(0.21, 0.2) is True


def test_budget_stopped_is_read_in_one_function() -> None:
    """The file's record of a budget stop (``interrupted.reason`` "budget: …", the budget's
    ``stopped``) is turned into an exit only by the policy."""
    where = [p.relative_to(GATE.parent).as_posix() for p in sorted(GATE.rglob("*.py"))
             if re.search(r"""startswith\(\s*["']budget|\.get\(\s*["']stopped["']\s*\)""",
                          _code(p)) and p != POLICY]
    assert where == [], where


# ----- the same rule, through gate run and the ci policy -------------------------------------

def _run(task: str, replication: int, status: str, reason: str | None = None) -> RunResult:
    return RunResult.model_validate({
        "task": task, "replication": replication, "status": status, "reason": reason,
        "turns": 1, "usage": {"input_tokens": 1, "output_tokens": 1,
                              "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        "cost_usd": 0.01, "duration_s": 1.0, "notes": None})


def _results(runs: list[RunResult], interrupted: Interruption | None = None) -> Results:
    tasks = sorted({r.task for r in runs} | {"alpha"})
    res = new_results(model="m", agent={"kind": "oracle", "fingerprint": "f"},
                      suite={"digest": "d", "tasks": {t: {"digest": t} for t in tasks}},
                      commit=None, runs=runs)
    res.interrupted = interrupted
    return res


def _gate_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, results: Results,
              *args: str) -> tuple[int, str]:
    """``gate run`` in-process, its suite run replaced by ``results`` (what the session
    wrote): the exit and the error line are the CLI's own."""
    import gate.execution.run

    monkeypatch.setattr(gate.execution.run, "run_suite", lambda req, **_: results)
    tasks = tiny_suite(tmp_path / "suite")
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["run", "--tasks", str(tasks), "--agent", "oracle", "-k",
                                    "1", "-o", str(out), *args])
    return res.exit_code, res.output


def _message(check: object, *args: object) -> str:
    with pytest.raises(Unmeasurable) as exc:
        check(*args)  # type: ignore[operator]
    assert exc.value.exit_code == 3
    return str(exc.value)


def test_gate_run_says_the_policys_infra_message(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    results = _results([_run("alpha", 0, "error", "setup exited 7"), _run("alpha", 1, "passed")])
    code, out = _gate_run(tmp_path, monkeypatch, results)
    said = _message(check_infra, results, 0.2)
    assert code == 3 and said in out, out
    assert "1 of 2 runs were infra errors (more than 20%); first: setup exited 7" in said
    # the refresh's wording, over the same rule: 50 % > 20 %
    assert "50% of this refresh's runs were infra errors (limit 20%)" in _message(
        functools.partial(check_infra, refresh=True), results, 0.2)
    # at the limit: measurable for gate run, a refresh and compare alike
    at_limit = _results([_run("alpha", 0, "error", "x"), *(_run("alpha", i, "passed")
                                                            for i in range(1, 5))])
    assert infra_count(at_limit).rate == 0.2
    check_infra(at_limit, 0.2)
    check_infra(at_limit, 0.2, refresh=True)
    code, out = _gate_run(tmp_path / "at", monkeypatch, at_limit)
    assert code in (0, 1), out


def test_gate_run_says_the_policys_budget_message(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    stop = Interruption(reason="budget: --max-cost $0.0100 reached: …",
                        missing=[MissingRun(task="alpha", replication=1)])
    results = _results([_run("alpha", 0, "passed")], stop)
    code, out = _gate_run(tmp_path, monkeypatch, results, "--max-cost", "0.01")
    assert code == 3, out
    assert "the run was stopped by the budget with 1 planned run not started" in out
    assert "--max-cost" in out and "skipped" in out and "gate run --resume" in out
    # gate ci's words, from the same function: only who ran it and what follows differ
    ci = _message(check_budget, results)
    assert ci.startswith("the suite's run was stopped by the budget with 1 planned run not "
                         "started (budget: --max-cost $0.0100 reached: …): ")
    assert "refreshes nothing" in ci


def test_gate_run_ab_applies_the_infra_rule_to_both_arms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gate.execution.ab

    broken = _results([_run("alpha", 0, "error", "no sandbox")])
    fine = _results([_run("alpha", 0, "passed")])

    class Pair:
        base, pr = fine, broken

    monkeypatch.setattr(gate.execution.ab, "run_ab_command", lambda *a, **k: Pair())
    code, out = _gate_run(tmp_path, monkeypatch, fine, "--ab", "HEAD")
    assert code == 3 and _message(check_infra, broken, 0.2) in out, out
