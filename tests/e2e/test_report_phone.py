"""``gate report --html`` on a phone: the page fits 390 px, and still reads at 1280 px.

Reports of real ``gate run --sim`` runs, written by ``gate report`` (a regression, no
regression, a run of skill conditions alone and against a baseline, a pooled baseline shown by
its traces), opened in headless Chromium (the OS package) through Playwright at both widths.
Nothing but a table's (or a wide plot's) own box scrolls sideways; the page itself never
does. The metrics table's change cell is one line, never one token a line. The banner says
the verdict and each of its reasons once (``gate compare --format json``'s). A screenshot of
each report at 390 px is kept in the test's folder, to look at.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gate.compare import Comparison, compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, load_results
from gate.core.traces import pooled_sidecar, results_traces
from gate.report import render_html
from tests.helpers.simruns import TASKS, gate_popen, one_turn_config, sim_run

REPO = Path(__file__).resolve().parents[2]
WIDTHS = (390, 1280)




def _done(*procs: subprocess.Popen[str], codes: tuple[int, ...] = (0, 1, 3)) -> list[str]:
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=280)
        assert p.returncode in codes, out + err
        outs.append(out)
    return outs






def _pooled_with_traces(tmp: Path) -> Path:
    """The baseline as main's refresh keeps it: no transcripts, its traces beside it."""
    pooled = tmp / "pooled"
    pooled.mkdir()
    shutil.copy(tmp / "base.json", pooled / "baseline.json")
    base = load_results(tmp / "base.json")
    traces = [t for t in results_traces(base, tmp / "base.json") if t.n_turns]
    assert traces
    (pooled / "baseline.traces.jsonl").write_text(pooled_sidecar(base, traces, []))
    return pooled / "baseline.json"


def _dirty(base: Path) -> Path:
    """The baseline as a refresh from a working tree with uncommitted changes marks it: the
    judge notes it on every report."""
    data = json.loads(base.read_text())
    data["uncommitted"] = [{"commit": data.get("commit"), "created_at": data["created_at"],
                            "why": "uncommitted changes"}]
    dirty = base.with_name("dirty-base.json")
    dirty.write_text(json.dumps(data))
    return dirty


Reports = dict[str, tuple[Path, bool, dict[str, Any] | None]]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    """name → (the report, whether it has a baseline, ``gate compare --format json``'s verdict
    when the banner is to say it)."""
    tmp = tmp_path_factory.mktemp("phone")
    _done(sim_run(tmp, "base", 1), sim_run(tmp, "pr", 2),
          sim_run(tmp, "one-turn", 2, config=one_turn_config(tmp)),
          sim_run(tmp, "skills", 3, "--condition", "control", "--condition", "target", k=2),
          sim_run(tmp, "one-task", 4, tasks=TASKS[:1], k=2))
    pooled = _pooled_with_traces(tmp)
    base = tmp / "base.json"
    dirty = _dirty(base)
    # name: results, baseline, whether the banner is to say gate compare's verdict (it is the
    # page's whenever there is a baseline: tests/e2e/test_one_verdict.py)
    made = {"regression": ("one-turn", base, True), "no-regression": ("pr", base, True),
            "inconclusive": ("one-task", base, True), "skills-alone": ("skills", None, False),
            "skills": ("skills", base, True), "traces": ("pr", pooled, True),
            "notes": ("pr", dirty, True)}
    out: Reports = {}
    for name, (results, baseline, judged) in made.items():
        page = tmp / f"{name}.html"
        args: list[str | Path] = [tmp / f"{results}.json", "--html", page, "--config",
                                  REPO / "gate.toml"]
        verdict = None
        if baseline is not None:
            args += ["--baseline", baseline]
        if baseline is not None and judged:
            verdict = json.loads(_done(gate_popen(
                "compare", baseline, tmp / f"{results}.json", "--format", "json", "--config",
                REPO / "gate.toml", cwd=tmp))[0])
        written = _done(gate_popen("report", *args, cwd=tmp), codes=(0,))[0]
        if verdict is not None:
            assert f"report written ({verdict['verdict']}" in written, (name, written)
        out[name] = (page, baseline is not None, verdict)
    for name in ("skills", "skills-alone"):  # the conditions' table and effects
        assert 'id="conditions"' in out[name][0].read_text()
    said = {n: v["verdict"] for n, (_, _, v) in out.items() if v is not None}
    assert said == {"regression": "regression", "no-regression": "pass",
                    "inconclusive": "inconclusive", "skills": "inconclusive", "traces": "pass",
                    "notes": "pass"}
    assert out["notes"][2] is not None and out["notes"][2]["notes"], "no note to show"
    return out


# what the page measures of itself: its width, each table's scrolling box, the change cells'
# lines (distinct tops of the text's boxes), the banner's text
_MEASURE = """() => {
  const scroller = (el, kinds = ["auto", "scroll"]) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (kinds.includes(getComputedStyle(p).overflowX)) return p;
    }
    return null;
  };
  const lines = (el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].filter(r => r.width > 0)
                   .map(r => Math.round(r.top))).size;
  };
  const tables = [...document.querySelectorAll("table")].filter(t => t.offsetParent !== null)
    .map(t => {
      const box = scroller(t);
      const b = box ? box.getBoundingClientRect() : null;
      return {id: t.id || t.className, wide: t.getBoundingClientRect().width,
              box: box !== null, left: b ? b.left : null, right: b ? b.right : null,
              scrolls: box ? box.scrollWidth > box.clientWidth : false};
    });
  const change = [...document.querySelectorAll("#metrics table.metrics tbody td:nth-child(4)")]
    .map(td => ({text: td.innerText, lines: lines(td.firstChild)}));
  const values = [...document.querySelectorAll("#conditions td")]
    .map(td => ({text: td.innerText, lines: lines(td)}));
  const over = [...document.querySelectorAll("body *")].filter(el => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > innerWidth + 1 &&
      scroller(el, ["auto", "scroll", "hidden", "clip"]) === null;
  }).map(el => el.tagName + "." + el.className);
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth, tables, change, values,
          over, banner: document.querySelector("header.verdict").innerText};
}"""


def _open(chromium: Any, page_path: Path, width: int) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_path.as_uri())
    assert errors == []
    return page


@pytest.mark.slow
@pytest.mark.browser
def test_every_report_fits_a_phone_and_a_desktop(reports: Reports, chromium: Any,
                                                  tmp_path: Path) -> None:
    """Each report at each width (one test: the reports are built once, in one worker)."""
    problems: list[str] = []
    for name, (page_path, with_baseline, verdict) in reports.items():
        for width in WIDTHS:
            page = _open(chromium, page_path, width)
            if width == 390:
                shot = tmp_path / f"{name}-390.png"
                page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot: {shot}")
            problems += [f"{name} at {width} px: {p}" for p in _fits(page, width, with_baseline,
                                                                         verdict)]
            page.get_by_role("button", name="expand all").click()  # every run, opened
            problems += [f"{name} at {width} px, every run open: {p}"
                         for p in _fits(page, width, with_baseline, verdict)]
            page.context.close()
    assert problems == [], "\n".join(problems)


def _fits(page: Any, width: int, with_baseline: bool,
          verdict: dict[str, Any] | None) -> list[str]:
    """What is wrong with the page at ``width``: nothing, or one line per fault."""
    m = page.evaluate(_MEASURE)
    problems = []
    # nothing but a table's own box scrolls sideways: never the page
    if m["scrollWidth"] > m["innerWidth"] or m["over"]:
        problems.append(f"the page scrolls sideways ({m['scrollWidth']} px wide): "
                        f"{sorted(set(m['over']))[:8]}")
    for t in m["tables"]:
        if not t["box"]:
            problems.append(f"table {t['id']}: no box of its own to scroll in")
        elif t["left"] < 0 or t["right"] > width + 1:
            problems.append(f"table {t['id']}: its box runs off the page ({t})")
    if width == 390 and with_baseline:  # the metrics table is wider than a phone: its box scrolls
        metrics = next(t for t in m["tables"] if t["id"] == "metrics")
        if metrics["box"]:
            box = page.locator("#metrics table.metrics").evaluate_handle("t => t.parentElement")
            box.evaluate("b => { b.scrollLeft = 10000; }")
            if not (metrics["scrolls"] and box.evaluate("b => b.scrollLeft") > 0
                    and page.evaluate("window.scrollX") == 0):
                problems.append("the metrics table's box does not scroll")
    # the change: one line, not one token a line
    if len(m["change"]) != (5 if with_baseline else 0):
        problems.append(f"{len(m['change'])} change cells")
    problems += [f"the change cell takes {c['lines']} lines: {c['text']!r}"
                 for c in m["change"] if c["lines"] != 1]
    # the skill conditions' values: a number beside its unit, an interval on its line
    problems += [f"a condition's value takes {c['lines']} lines: {c['text']!r}"
                 for c in m["values"] if c["lines"] > 1]
    if verdict is not None:
        problems += _said_once(m["banner"], verdict)
    return problems


def _said_once(banner: str, verdict: dict[str, Any]) -> list[str]:
    """The banner says the verdict once, each of compare's reasons once, whatever else its
    headline says (no regression's pass rate and tasks, a note) once, and each of its notes
    once."""
    word = {"pass": "No regression", "regression": "Regression",
            "inconclusive": "Inconclusive"}[verdict["verdict"]]
    headline = verdict["headline"]
    assert headline.startswith(word + ": ")
    said = [word]
    rest = headline[len(word) + 2:]
    for reason in verdict["reasons"]:
        said.append(reason)
        rest = rest.replace(reason, "", 1)
    said += [p for p in (p.strip(" ;") for p in rest.split("; ")) if p] + verdict["notes"]
    return [f"the banner says {s!r} {banner.count(s)} times: {banner!r}" for s in said
            if banner.count(s) != 1]


def _judged(kind: str) -> tuple[Results, Results, Comparison]:
    rng = np.random.default_rng(0)
    base = synthetic_results(reference_rates(4), 6, rng)
    pr = synthetic_results(reference_rates(4), 6, rng)
    if kind == "inconclusive":  # one task of four run
        pr.runs = [r for r in pr.runs if r.task == pr.runs[0].task]
    else:
        for r in pr.runs:
            r.status, r.reason = "failed", "verify exited 1"
    c = compare(base, pr, GateSettings(permutations=999, power_simulations=0))
    if kind == "with a note":  # as the unpriced model's note rides on any headline
        c = c.model_copy(update={"headline": f"{c.headline}; NOTE: no price for model-x"})
    return base, pr, c


@pytest.mark.parametrize("kind", ["regression", "inconclusive", "with a note"])
def test_the_banner_says_the_verdict_and_each_reason_once(kind: str) -> None:
    """The title says the verdict, the lines under it compare's headline without the verdict,
    each of its reasons once (a regression's headline is its reasons joined: the banner once
    printed them twice, and the verdict twice)."""
    base, pr, c = _judged(kind)
    assert c.verdict == ("inconclusive" if kind == "inconclusive" else "regression")
    # inconclusive: too few tasks, their runs, and any metric past its margin left unclear
    assert len(c.reasons) >= 2 if kind == "inconclusive" else len(c.reasons) == 1
    page = render_html(pr, baseline=base, comparison=c)
    header = re.search(r"<header class=\"verdict[^>]*>(.*?)</header>", page, re.S)
    assert header is not None
    lines = [html.unescape(re.sub(r"<[^>]+>", "", x)).strip()
             for x in header.group(1).strip().splitlines()]
    word = c.headline.split(":")[0]
    assert lines[0] == f"agent-gate: {word}"
    assert sum(line.count(word) for line in lines) == 1
    assert lines[1:] == [*c.reasons, *(["NOTE: no price for model-x"]
                                       if kind == "with a note" else [])]
