"""``gate report``'s baseline side from the traces kept next to the baseline.

When no transcript of a baseline run exists here (a pooled ``baseline.json`` has none), the
page shows the run's trace from ``baseline.traces.jsonl`` (main's refresh keeps it): each
turn's tool calls in brief, the turn's usage, the outcome, the final message and verify's
tail. Full transcripts win when the baseline is a run's own results with its transcripts. A
trace is untrusted text like a transcript; a sidecar that cannot be read is one warning line.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

from gate.core.results import load_results
from gate.core.traces import SIDECAR_LIMIT, Call, Trace, Turn
from gate.report._html import render_html
from tests.helpers.report import HOSTILE, _report, _results, _run

BREAKOUT = "</pre></details></li></ol><script>alert('trace')</script>"


def _trace(task: str, rep: int, marker: str, *, arg: str = "ls -la",
           final: str = "done", verify: str = "ok") -> Trace:
    return Trace(task=task, replication=rep, status="passed", turns=[
        Turn(n=1, stop="tool_use", input=1234, write=5678, read=9, output=20,
             calls=[Call(name="bash", arg=arg), Call(name="read_file", arg=f"path={marker}")],
             more_calls=2),
        Turn(n=2, stop="end_turn", input=3, read=7000, output=40)],
        final=final, verify=verify)


def _sidecar(path: Path, traces: list[Trace]) -> Path:
    path.write_text("".join(t.model_dump_json(exclude_defaults=True) + "\n" for t in traces))
    return path


def test_a_baseline_without_transcripts_shows_its_runs_traces_as_text() -> None:
    base = _results([_run("alpha", r, "passed") for r in range(2)])
    pr = _results([_run("alpha", r, "failed", reason="verify exited 1") for r in range(2)])
    traces = [_trace("alpha", 0, "MARK-0", arg=HOSTILE, final=BREAKOUT, verify=BREAKOUT),
              _trace("alpha", 1, "MARK-1")]
    page = render_html(pr, baseline=base, baseline_traces=traces)
    # each baseline run: its trace's turns, calls (in brief), usage, final message, verify
    assert page.count("the run's trace, as main's refresh kept it") == 2
    assert "path=MARK-0" in page and "path=MARK-1" in page
    assert "turn 1 · tool_use · in 1,234 · out 20 · cache write 5,678 · cache read 9" in page
    assert "and 2 more calls" in page
    assert "calls bash" in page and "calls read_file" in page
    # untrusted: every hostile string is escaped, none closes the page's elements
    assert str(escape(HOSTILE)) in page
    assert page.count(str(escape(BREAKOUT))) == 2
    assert "<script>alert" not in page and "alert('trace')</script>" not in page
    assert page.count("<details") == page.count("</details>")
    assert page.count("<script") == 2  # the data block and the page's own script


def test_full_transcripts_win_over_traces(pair: dict[str, Path]) -> None:
    """The baseline is a run's own results with its transcripts: those are shown, in full."""
    page = render_html(load_results(pair["pr"]), results_path=pair["pr"],
                       baseline=load_results(pair["base"]), baseline_path=pair["base"],
                       baseline_traces=[_trace("alpha", 0, "TRACE-ONLY")])
    assert "BASE-TRANSCRIPT-alpha-0" in page
    assert "TRACE-ONLY" not in page and "main's refresh kept it" not in page


def test_a_run_with_no_trace_says_so() -> None:
    base = _results([_run("alpha", r, "passed") for r in range(2)])
    pr = _results([_run("alpha", r, "passed") for r in range(2)])
    page = render_html(pr, baseline=base, baseline_traces=[_trace("alpha", 1, "MARK-1")])
    assert "path=MARK-1" in page
    assert page.count("no trace kept for this run") == 1


def _no_transcripts(pair: dict[str, Path]) -> None:
    """The baseline as a pooled ``baseline.json``: no transcripts beside it."""
    shutil.rmtree(pair["base"].with_name("base.transcripts"))


def _cli(pair: dict[str, Path], *extra: str | Path) -> tuple[int, str, str]:
    return _report(pair["pr"], "--baseline", pair["base"], "--html", pair["out"],
                   "--config", pair["config"], *extra)


def test_gate_report_picks_up_the_sidecar_next_to_the_baseline(
        pair: dict[str, Path]) -> None:
    _no_transcripts(pair)
    _sidecar(pair["base"].with_name("base.traces.jsonl"),
             [_trace("beta", r, f"SIDECAR-beta-{r}") for r in range(3)])
    code, out, err = _cli(pair)
    assert code == 0 and "report written" in out, out + err
    assert err == ""
    page = pair["out"].read_text()
    assert all(f"path=SIDECAR-beta-{r}" in page for r in range(3))
    assert page.count("no trace kept for this run") == 3  # alpha's runs: none kept


def test_gate_report_reads_the_traces_file_named(pair: dict[str, Path],
                                                  tmp_path: Path) -> None:
    _no_transcripts(pair)
    _sidecar(pair["base"].with_name("base.traces.jsonl"), [_trace("beta", 0, "NEXT-TO")])
    named = _sidecar(tmp_path / "elsewhere.jsonl", [_trace("beta", 0, "NAMED")])
    code, out, err = _cli(pair, "--baseline-traces", named)
    assert code == 0, out + err
    page = pair["out"].read_text()
    assert "path=NAMED" in page and "NEXT-TO" not in page
    code, out, err = _report(pair["pr"], "--baseline-traces", named, "--html", pair["out"])
    assert code == 2 and "--baseline-traces needs --baseline" in err, out + err


@pytest.mark.parametrize("damage", ["not-utf8", "oversized", "garbage", "directory"])
def test_a_damaged_sidecar_is_a_warning_and_the_report_is_written(
        pair: dict[str, Path], damage: str) -> None:
    _no_transcripts(pair)
    side = pair["base"].with_name("base.traces.jsonl")
    good = _trace("beta", 0, "GOOD-LINE").model_dump_json()
    if damage == "not-utf8":
        side.write_bytes(b"\xff\xfe" + good.encode() + b"\n")
    elif damage == "oversized":
        side.write_text((good + "\n") * (SIDECAR_LIMIT // len(good) + 2))
    elif damage == "garbage":
        side.write_text('{"task": 1}\nnot json\n' + good + "\n[1,2]\n")
    else:
        side.mkdir()
    code, out, err = _cli(pair)
    assert code == 0 and "report written" in out, out + err
    assert "Traceback" not in out + err
    (line,) = err.splitlines()
    assert line.startswith("gate: warning: ")
    assert "base.traces.jsonl" in line
    page = pair["out"].read_text()
    assert page.startswith("<!DOCTYPE html>")
    if damage == "garbage":  # the lines that are traces are still shown
        assert "3 of 4 lines are not traces" in line and "path=GOOD-LINE" in page
    else:
        assert "GOOD-LINE" not in page


def test_a_pooled_baselines_runs_find_their_traces_by_the_replication_they_ran_as() -> None:
    """Pooling numbers a baseline's runs afresh (3, 4, 5 here); each keeps its transcript's
    name (``alpha-r0.jsonl``), the replication its trace records, and the refresh it came
    from: a refresh's runs and traces pair up exactly, another refresh's do not."""
    runs = [_run("alpha", r, "passed", transcript=f"results.transcripts/alpha-r{r - 3}.jsonl")
            for r in range(3, 6)]
    for r in runs:
        r.refresh = "2026-11-02T00:00:00Z"
    old = _run("alpha", 0, "passed", transcript="results.transcripts/alpha-r0.jsonl")
    old.refresh = "2026-11-01T00:00:00Z"
    base = _results([old, *runs])
    traces = [_trace("alpha", n, f"MARK-{n}").model_copy(update={"refresh": runs[0].refresh})
              for n in range(3)]
    page = render_html(_results([_run("alpha", 0, "passed")]), baseline=base,
                       baseline_traces=traces)
    base_col = page[page.index("<h4>baseline</h4>"):]
    shown = {}
    for part in base_col.split('<span class="rep">#')[1:]:
        rep = int(part[:part.index("<")])
        shown[rep] = sorted(set(re.findall(r"path=(MARK-\d)", part[:part.index("</details>")])))
    assert shown == {0: [], 3: ["MARK-0"], 4: ["MARK-1"], 5: ["MARK-2"]}
