"""The comment's evidence (gate/pool/evidence.py) from hand-made traces: where runs part ways, the
cache diagnosis, the bounds, and untrusted transcript text staying inert in the Markdown."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from gate.compare import compare
from gate.compare._synthetic import synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, RunResult
from gate.core.traces import Trace, trace_from_events
from gate.pool import evidence
from gate.report import render_markdown
from gate.secrets import Redactor

HOSTILE = ("```\n</details><script>alert(1)</script> @someone please look "
           "<img src=x onerror=alert(2)> [click](https://evil.example) #12 | cell `x`")


def _arms(broken: int = 1) -> tuple[Results, Results]:
    rng = np.random.default_rng(7)
    base = synthetic_results([1.0] * 4, 6, rng, fingerprint="a")
    pr = synthetic_results([0.0] * broken + [1.0] * (4 - broken), 6, rng, fingerprint="b",
                           created_at="2026-11-30T01:00:00Z")
    return base, pr


def _model(n: int, *calls: tuple[str, str], usage: tuple[int, int, int, int] = (0, 10, 900, 5)
           ) -> dict[str, Any]:
    return {"type": "model", "turn": n, "stop_reason": "tool_use" if calls else "end_turn",
            "usage": {"input_tokens": usage[0], "cache_creation_input_tokens": usage[1],
                      "cache_read_input_tokens": usage[2], "output_tokens": usage[3]},
            "content": [{"type": "tool_use", "id": f"x{n}{i}", "name": name,
                         "input": {"command": arg}} for i, (name, arg) in enumerate(calls)]}


def _traces(results: Results, task: str, script: list[dict[str, Any]]) -> list[Trace]:
    return [trace_from_events(script, r, redact=Redactor()) for r in results.runs
            if r.task == task]


GOOD = [_model(1, ("bash", "ls -la")), {"type": "tool", "output": "a.py"},
        _model(2, ("bash", "sed -i s/a/b/ a.py")), {"type": "tool", "output": ""},
        _model(3), {"type": "final", "message": "done"},
        {"type": "verify", "returncode": 0, "output": "ok"}]
BAD = [_model(1, ("bash", "ls -la")), {"type": "tool", "output": "a.py"},
       _model(2, ("bash", f"cat {HOSTILE}")), {"type": "tool", "output": HOSTILE},
       _model(3), {"type": "final", "message": HOSTILE},
       {"type": "verify", "returncode": 1, "output": f"FAILED\n{HOSTILE}"}]


def _runs_of(results: Results, task: str) -> list[RunResult]:
    return [r for r in results.runs if r.task == task]


def test_a_broken_task_names_the_step_where_the_runs_part() -> None:
    base, pr = _arms()
    c = compare(base, pr, GateSettings())
    ev = evidence.build(c, pr, base, _traces(pr, "t00", BAD), _traces(base, "t00", GOOD))
    assert [t.task for t in ev.tasks] == ["t00"]
    text = str(evidence.render(ev))
    assert ("**They part at step 2:** the baseline's runs called `bash` (`sed`) (6 of 6); "
            "this PR's failing runs called `bash` (`cat`) (6 of 6).") in text
    assert ("- Baseline: `bash` (`ls`) → `bash` (`sed`) → final answer — the common path of 6 "
            "passing runs (median 3 turns)") in text
    assert "**t00** (6/6 → 0/6 passed)" in text
    assert len(re.findall(r"This PR's replication \d", text)) == evidence.MAX_RUNS


def test_untrusted_transcript_text_stays_inert() -> None:
    base, pr = _arms()
    c = compare(base, pr, GateSettings())
    mine = _traces(pr, "t00", BAD)
    for t in mine:  # a tool named to break out of its code span
        t.turns[1].calls[0].name = "ba`sh</details>"
    ev = evidence.build(c, pr, base, mine, _traces(base, "t00", GOOD))
    section = str(evidence.render(ev))
    body = render_markdown(c, evidence=evidence.render(ev))
    assert section in body
    for text in (section, body):
        assert "```" not in text and "<script" not in text and "<img" not in text
        assert "@someone" not in text and "@\u200dsomeone" in text
        # no link, no autolink, no issue reference (``&#124;`` is the escaped pipe)
        assert "](https://evil" not in text and not re.search(r"(?<!&)#\d", text)
        assert "https:\u200d//evil" in text and "#\u200d12" in text
        # our <details> blocks stay balanced: the transcript's </details> closed nothing
        assert text.count("<details>") == text.count("</details>")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "ba&#96;sh&lt;/details&gt;" in section
    # every untrusted line is one list item: no newline from the transcript survives
    lines = section.splitlines()
    assert all(not ln.startswith(("FAILED", "</details><script")) for ln in lines)


def test_without_baseline_traces_only_the_prs_runs_are_shown() -> None:
    base, pr = _arms()
    c = compare(base, pr, GateSettings())
    ev = evidence.build(c, pr, base, _traces(pr, "t00", BAD), None,
                        base_missing="No traces are kept next to this baseline yet.")
    text = str(evidence.render(ev))
    assert "> No traces are kept next to this baseline yet." in text
    assert "They part" not in text and "This PR's replication 0" in text


def test_cache_writes_on_every_turn_are_called_out() -> None:
    base = [(0, 1000, 0, 5), (0, 50, 1000, 5), (0, 40, 1050, 5)]
    pr = [(0, 1010, 0, 5), (0, 1060, 0, 5), (0, 1100, 0, 5)]
    note = str(evidence.cache_note(base, pr))
    assert note.startswith("**Cache writes on every turn from turn 1:** the prompt's prefix "
                           "changes between requests")
    assert "They part at turn 2: the baseline's runs wrote 50 and read 1,000 tokens; this " \
           "PR's runs wrote 1,060 and read 0." in note
    assert evidence.cache_note(base, base) is None
    later = [(0, 1000, 0, 5), (0, 50, 1000, 5), (0, 1100, 0, 5)]
    assert "From turn 3 the PR's runs write the prompt cache again" in str(
        evidence.cache_note(base, later))


def test_a_usage_regression_lists_the_tasks_that_moved_most() -> None:
    rng = np.random.default_rng(3)
    base = synthetic_results([1.0] * 4, 8, rng, fingerprint="a")
    pr = synthetic_results([1.0] * 4, 8, rng, fingerprint="b", cost_scale=3.0,
                           created_at="2026-11-30T01:00:00Z")
    c = compare(base, pr, GateSettings())
    assert c.metric("cost").verdict == "regression"
    ev = evidence.build(c, pr, base, [], [])
    assert ev.metrics == [c.metric("cost").label] and len(ev.movers) == 4
    text = str(evidence.render(ev))
    assert "cost per run regressed: the tasks that moved most" in text
    assert "| task | turns | cost | cache hit |" in text


def test_the_evidence_stays_within_its_budget() -> None:
    base, pr = _arms(broken=4)
    c = compare(base, pr, GateSettings())
    huge = [_model(1, ("bash", "ls")), {"type": "tool", "output": "x"},
            *[_model(n, ("bash", f"cat {'y' * 80}"), ("bash", "z" * 80)) for n in range(2, 40)],
            {"type": "final", "message": "m" * 400}]
    mine = [t for task in ("t00", "t01", "t02", "t03") for t in _traces(pr, task, huge)]
    theirs = [t for task in ("t00", "t01", "t02", "t03") for t in _traces(base, task, GOOD)]
    old = evidence.BUDGET
    try:
        evidence.BUDGET = 6000
        text = str(evidence.render(evidence.build(c, pr, base, mine, theirs)))
    finally:
        evidence.BUDGET = old
    assert len(text) <= 6000
    assert re.search(r"more regressed tasks? not shown", text)
