"""``gate report --html``: one self-contained page, untrusted text kept text.

The fast tests read the page as text (escaping, the CSP hashes, no outside reference, which
transcripts it reads, exit codes). The browser test opens a report of real ``gate run --sim``
runs in headless Chromium (the OS package) through Playwright: the table sorts and filters, a
transcript expands, nothing is logged to the console, no request leaves the file, and a
transcript holding ``<script>`` shows it as text and runs nothing. Without Chromium it skips
with the reason; with ``GATE_REQUIRE_BROWSER=1`` (set by ``.ci/run``) it fails instead.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gate.compare import arm_stats, compare, intervals
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import (
    RunResult,
    load_results,
    write_results,
)
from gate.core.traces import pooled_sidecar, results_traces
from gate.report import render_html
from tests.helpers.browser import find_browser
from tests.helpers.report import HOSTILE, _report, _transcript

REPO = Path(__file__).resolve().parents[2]
DATA_OPEN = '<script type="application/json" id="gate-data">'


def _write(pair: dict[str, Path], *extra: str | Path) -> str:
    code, out, err = _report(pair["pr"], "--baseline", pair["base"], "--html", pair["out"],
                             "--config", pair["config"], *extra)
    assert code == 0, out + err
    # 3 v 3 runs of two tasks: the metric tests could not block, so the verdict may be
    # inconclusive (docs/statistics.md, "Resolution"); what matters here is the page
    assert any(f"report written ({v}" in out for v in ("regression", "pass", "inconclusive")), out
    return pair["out"].read_text()


def _data_block(page: str) -> str:
    start = page.index(DATA_OPEN) + len(DATA_OPEN)
    return page[start:page.index("</script>", start)]


def test_untrusted_text_stays_text(pair: dict[str, Path]) -> None:
    page = _write(pair)
    # every hostile string is escaped wherever it lands: reason, notes, transcript, event type
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/script&gt;&lt;img src=x" in page
    assert page.count("&lt;script&gt;alert(1)") >= 5
    assert "<img" not in page and "<!--" not in page
    assert re.search(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", page) is None  # no tag with a handler
    assert len(re.findall(r"<script\b", page)) == 2  # the data block and the page's script
    assert page.count("</script>") == 2
    # the data block holds the reason verbatim once decoded, and no "<" at all
    block = _data_block(page)
    assert "<" not in block and ">" not in block and "&" not in block
    data = json.loads(block)
    beta = next(t for t in data["tasks"] if t["task"] == "beta")
    assert HOSTILE in beta["reasons"]


def test_the_csp_allows_only_the_pages_own_script_and_style(pair: dict[str, Path]) -> None:
    page = _write(pair)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp is not None
    assert page.index("Content-Security-Policy") < page.index("<style>")
    policy = dict(d.strip().split(" ", 1) for d in html.unescape(csp.group(1)).split(";"))
    assert policy["default-src"] == "'none'" and policy["img-src"] == "data:"
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    style = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(script) == 1 and len(style) == 1

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert policy["script-src"] == digest(script[0])  # no 'unsafe-inline', no host
    assert policy["style-src"] == digest(style[0])
    assert 'style="' not in page  # an inline style attribute would be refused by the policy
    assert re.search(r"<[a-zA-Z][^>]*\son[a-z]+\s*=", page) is None  # nor an inline handler


def test_the_page_references_nothing_outside_itself(pair: dict[str, Path]) -> None:
    page = _write(pair, "--run-url", "https://github.com/o/r/actions/runs/1")
    assert re.findall(r'\ssrc="', page) == []
    hrefs = re.findall(r'\shref="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") or h == "https://github.com/o/r/actions/runs/1"
                         for h in hrefs)
    assert "@import" not in page and "url(" not in page
    # the only absolute URLs are the SVG namespace (never fetched) and the CI run link
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page))
    assert urls <= {"http://www.w3.org/2000/svg", "https://github.com/o/r/actions/runs/1"}


def test_the_page_shows_the_verdict_metrics_plots_and_both_arms_transcripts(
        pair: dict[str, Path]) -> None:
    page = _write(pair)
    settings = GateSettings(permutations=999, power_simulations=0)
    comparison = compare(load_results(pair["base"]), load_results(pair["pr"]), settings)
    assert f"agent-gate: {'No regression' if comparison.verdict == 'pass' else ''}" in page \
        or "agent-gate: Regression" in page or "agent-gate: Inconclusive" in page
    for label in ("Pass rate", "Mean turns", "Cost per task-run", "Cache-hit rate",
                  "Duration per task-run"):
        assert f'<th scope="row">{label}</th>' in page
    assert page.count('<span class="iv">') == 5 * 3  # baseline, this run, change
    assert page.count("<svg ") == 3  # pass rate per task, turns, cost
    assert "newly failing" in page or "worse" in page or "flaky" in page
    # every run of both arms, its transcript beside the other arm's
    for arm in ("PR", "BASE"):
        for task in ("alpha", "beta"):
            for rep in range(3):
                if (arm, task, rep) != ("PR", "beta", 0):
                    assert f"{arm}-TRANSCRIPT-{task}-{rep}" in page
    assert page.count('<details class="run">') == 12
    assert page.count('<div class="col"><h4>baseline</h4>') == 2


def test_without_a_baseline_the_results_alone(pair: dict[str, Path]) -> None:
    code, out, _ = _report(pair["pr"], "--html", pair["out"])
    assert code == 0, out
    page = pair["out"].read_text()
    assert "Results alone (no baseline, no verdict)" in page
    assert "4/6 valid runs passed" in page
    assert "<h4>baseline</h4>" not in page and "<th>verdict</th>" not in page
    assert page.count('<span class="iv">') == 5
    assert "PR-TRANSCRIPT-alpha-2" in page and "BASE-TRANSCRIPT" not in page


def test_transcripts_are_read_only_beside_the_results(pair: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """A results file cannot make the report embed another file of the machine."""
    secret = tmp_path / "elsewhere" / "secret.jsonl"
    _transcript(secret.parent, secret.name, [{"type": "final", "message": "TOP-SECRET-1"}])
    (tmp_path / "pr.transcripts" / "linked.jsonl").symlink_to(secret)
    pr = load_results(pair["pr"])
    pr.runs[0].transcript = str(secret)  # a path outside the transcripts directory
    pr.runs[1].transcript = "pr.transcripts/linked.jsonl"  # a symlink out of it
    pr.runs[2].transcript = "../../etc/passwd"
    write_results(pair["pr"], pr)
    page = _write(pair)
    assert "TOP-SECRET-1" not in page and "root:x:" not in page
    assert page.count("transcript not available") >= 3


def test_bad_input_is_one_line_and_exit_2(pair: dict[str, Path], tmp_path: Path) -> None:
    code, _, err = _report(tmp_path / "nope.json", "--html", pair["out"])
    assert code == 2 and err.strip() == f"gate: error: {tmp_path / 'nope.json'}: results " \
                                        "file not found"
    (tmp_path / "bad.json").write_text('{"schema_version": 1}')
    code, _, err = _report(pair["pr"], "--baseline", tmp_path / "bad.json", "--html",
                           pair["out"])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "bad.json: invalid baseline" in err
    code, _, err = _report(pair["pr"])
    assert code == 2 and "--html" in err
    assert not pair["out"].exists()


def test_a_broken_transcript_line_is_shown_not_fatal(pair: dict[str, Path],
                                                     tmp_path: Path) -> None:
    with (tmp_path / "pr.transcripts" / "alpha-r0.jsonl").open("a") as fh:
        fh.write('{"type": "tool", "name": \n[1, 2]\n')
    page = _write(pair)
    assert page.count("unreadable line") == 2


def test_metric_values_match_the_comparison_and_lie_in_their_intervals() -> None:
    rng = np.random.default_rng(3)
    base = synthetic_results(reference_rates(), 8, rng)
    pr = synthetic_results(reference_rates(), 4, rng)
    settings = GateSettings(permutations=999, power_simulations=0)
    c = compare(base, pr, settings)
    tasks = [t.task for t in c.tasks if t.status == "compared"]
    for arm, results in (("baseline", base), ("candidate", pr)):
        by: dict[str, list[RunResult]] = {}
        for r in results.runs:
            by.setdefault(r.task, []).append(r)
        stats = arm_stats(by, tasks, 0.95, 0)
        for name in ("pass_rate", "turns", "cost", "cache_hit_rate"):
            value = getattr(c.metric(name), arm)  # type: ignore[arg-type]
            assert stats.values[name] == pytest.approx(value, rel=1e-9), (arm, name)
            iv = stats.intervals[name]
            assert iv is not None and iv[0] <= value <= iv[1], (arm, name, iv)
        assert len(stats.draws["turns"]) == 1000  # gate.compare's BOOTSTRAP resamples
    page = render_html(pr, baseline=base, comparison=c)
    assert "no transcript recorded" in page


def test_the_page_shows_the_intervals_compare_computes() -> None:
    """Every interval on the page is gate.compare's, formatted by the one formatter: the
    page computes none of its own (it once had its own Wilson and bootstrap)."""
    from gate.report import change_interval, interval

    rng = np.random.default_rng(5)
    base = synthetic_results(reference_rates(), 6, rng)
    pr = synthetic_results(reference_rates(), 4, rng)
    c = compare(base, pr, GateSettings(permutations=999, power_simulations=0))
    page = render_html(pr, baseline=base, comparison=c, seed=7)
    iv = intervals(pr, base, [t.task for t in c.tasks if t.status == "compared"], seed=7)
    for name in ("pass_rate", "turns", "cost", "cache_hit_rate"):
        for arm in (iv.candidate, iv.baseline):
            assert arm is not None
            text = interval(name, arm.intervals[name])
            assert text and html.escape(text) in page, (name, text)
    # a change's interval is the comparison's own (the bootstrap with its seed), on the page
    same = intervals(pr, base, [t.task for t in c.tasks if t.status == "compared"], seed=0)
    for name in ("turns", "cost", "duration"):
        m = c.metric(name)
        assert m.ci_low is not None and m.ci_high is not None
        assert (m.ci_low, m.ci_high) == same.changes[name]
        text = change_interval(name, (m.ci_low, m.ci_high))
        assert text and html.escape(text) in page, (name, text)
    for task, arms in iv.per_task.items():  # the plot's per-task Wilson intervals
        for arm, t in arms.items():
            if t.interval is not None:
                lo, hi = t.interval
                title = (f"{arm}: {t.passed}/{t.runs} passed, 95 % interval "
                         f"{lo * 100:.0f}–{hi * 100:.0f} %")
                assert html.escape(title) in page, (task, title)
    # the pass rate's per-arm Wilson interval is compare's own Wilson, not a copy of it
    p = iv.candidate.values["pass_rate"]
    assert p is not None and iv.candidate.intervals["pass_rate"] is not None


def test_beside_a_verdict_the_page_counts_the_runs_it_judged_the_plain_ones() -> None:
    """A baseline pooled with a skill condition's runs, a PR run with one beside its plain
    runs (``gate ci`` on a PR that touches a skill): the verdict compares the plain runs, so
    the page's task table, plot and arm intervals count those — not a mix whose pass rate the
    comparison never saw (they once did: the page's baseline read 20/40 where the comment
    said 20/20)."""
    from gate.compare import judge, plain_runs
    from gate.report import interval

    rng = np.random.default_rng(9)
    base = synthetic_results(reference_rates(), 6, rng)
    pr = synthetic_results(reference_rates(), 4, rng)
    task = sorted(base.suite.tasks)[0]

    def failing(results: Any, n: int) -> list[RunResult]:
        one = next(r for r in results.runs if r.task == task)
        return [one.model_copy(update={"condition": "target", "replication": i,
                                       "status": "failed", "reason": "condition"})
                for i in range(n)]

    mixed_base = base.model_copy(update={"runs": [*base.runs, *failing(base, 12)]})
    mixed_pr = pr.model_copy(update={"runs": [*pr.runs, *failing(pr, 8)]})
    c = judge(mixed_base, mixed_pr, GateSettings(permutations=999, power_simulations=0))
    page = render_html(mixed_pr, baseline=mixed_base, comparison=c)
    tasks = [t.task for t in c.tasks if t.status == "compared"]
    plain = intervals(plain_runs(mixed_pr), plain_runs(mixed_base), tasks)
    mixed = intervals(mixed_pr, mixed_base, tasks)
    assert plain.baseline is not None and mixed.baseline is not None
    shown = html.escape(interval("pass_rate", plain.baseline.intervals["pass_rate"]))
    assert shown in page
    assert html.escape(interval("pass_rate", mixed.baseline.intervals["pass_rate"])) not in page
    for arm in ("baseline", "candidate"):
        t = plain.per_task[task][arm]
        assert f"{arm}: {t.passed}/{t.runs} passed" in page
        m = mixed.per_task[task][arm]
        assert f"{arm}: {m.passed}/{m.runs} passed" not in page


def test_importing_the_report_imports_no_scipy() -> None:
    probe = ("import sys\nimport gate.report as r\nr.render_html, r.render_markdown, r.pct\n"
             "print('SCIPY', sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=120)
    assert "SCIPY []" in p.stdout, p.stdout + p.stderr


# ---- the browser ---------------------------------------------------------------------------


def _browser() -> str:
    """The system Chromium with Playwright, or skip (fail under GATE_REQUIRE_BROWSER=1)."""
    return find_browser()


def _gate(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "gate", *(str(a) for a in args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def sim_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of two real ``gate run --sim`` runs on two bundled tasks; the PR's with a
    hostile transcript event and reason."""
    tmp = tmp_path_factory.mktemp("report")
    procs = [_gate("run", "--config", REPO / "gate.toml", "--sim", "--task",
                   "fix-version-compare", "--task", "fix-slugify-whitespace", "-k", "2", "-j",
                   "2", "--seed", str(seed), "-o", tmp / f"{name}.json", cwd=tmp)
             for seed, name in ((1, "base"), (2, "pr"))]
    for p in procs:
        out, err = p.communicate(timeout=280)
        assert p.returncode in (0, 1), out + err
    pr = load_results(tmp / "pr.json")
    hostile = pr.runs[0]
    assert hostile.transcript and Path(hostile.transcript).exists()
    with open(hostile.transcript, "a") as fh:
        fh.write(json.dumps({"type": "tool", "name": "bash",
                             "input": {"command": "cat page.html"},
                             "output": f"HOSTILE-OUTPUT {HOSTILE} <img src=\"http://127.0.0.1:9/"
                                       "x.png\">", "is_error": False}) + "\n")
    hostile.status, hostile.reason = "failed", f"hostile reason {HOSTILE}"
    for r in pr.runs:  # distinct mean turns per task, so the numeric sort has an order to show
        r.turns = 17 if r.task == hostile.task else 3
    write_results(tmp / "pr.json", pr)
    p = _gate("report", tmp / "pr.json", "--baseline", tmp / "base.json", "--html",
              tmp / "report.html", "--config", REPO / "gate.toml", cwd=tmp)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, out + err
    return tmp / "report.html"


@pytest.fixture(scope="module")
def sim_traces_report(sim_report: Path) -> Path:
    """The same runs, the baseline as a pooled ``baseline.json`` keeps it: no transcripts
    beside it, its runs' traces in ``baseline.traces.jsonl`` next to it (as main's refresh
    writes them), one trace's tool call holding hostile text."""
    tmp = sim_report.parent
    pooled = tmp / "pooled"
    pooled.mkdir()
    shutil.copy(tmp / "base.json", pooled / "baseline.json")
    base = load_results(tmp / "base.json")
    traces = [t for t in results_traces(base, tmp / "base.json") if t.n_turns]
    assert traces and traces[0].turns[0].calls
    traces[0].turns[0].calls[0].arg = f"HOSTILE-TRACE {HOSTILE} </details>"
    (pooled / "baseline.traces.jsonl").write_text(pooled_sidecar(base, traces, []))
    p = _gate("report", tmp / "pr.json", "--baseline", pooled / "baseline.json", "--html",
              tmp / "report-traces.html", "--config", REPO / "gate.toml", cwd=tmp)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and err == "", out + err
    return tmp / "report-traces.html"


class _Page:
    """A page in headless Chromium that records console errors, dialogs, every request it
    starts for a URL that is not ``file:`` or ``data:`` (``requested``), the ones the
    browser refused by its Content-Security-Policy (``csp_blocked``), and those that got past
    the page to the network layer (``routed``: aborted there)."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requested: list[str] = []
        self.routed: list[str] = []
        self.csp_blocked: list[str] = []
        self.context.route("**/*", self._route)
        self.page.on("request", lambda r: None if _local(r.url) else self.requested.append(r.url))
        self.page.on("requestfailed", lambda r: self.csp_blocked.append(r.url)
                     if r.failure == "csp" else None)
        self.page.on("console", lambda m: self.errors.append(m.text)
                     if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _route(self, route: Any) -> None:
        if _local(route.request.url):
            route.continue_()
        else:
            self.routed.append(route.request.url)
            route.abort()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def _local(url: str) -> bool:
    return url.startswith(("file:", "data:"))


@pytest.mark.slow
@pytest.mark.browser
def test_the_report_in_a_real_browser(sim_report: Path, chromium: Any) -> None:
    view = _Page(chromium)
    page = view.page
    page.goto(sim_report.as_uri())
    rows = page.locator("#task-table tbody tr")
    assert rows.count() == 2
    assert page.locator("#count").inner_text() == "2 of 2 tasks"

    def visible_tasks() -> list[str]:
        return [t.strip() for t in page.locator(
            "#task-table tbody tr:not([hidden]) td:first-child").all_inner_texts()]

    # sorts: by task name both ways, then by mean turns (numeric)
    page.click("th[data-key=task] button")
    assert visible_tasks() == ["fix-slugify-whitespace", "fix-version-compare"]
    assert page.locator("th[data-key=task]").get_attribute("aria-sort") == "ascending"
    page.click("th[data-key=task] button")
    assert visible_tasks() == ["fix-version-compare", "fix-slugify-whitespace"]
    page.click("th[data-key=turns] button")
    turns = [float(t) for t in page.locator(
        "#task-table tbody tr td:nth-child(6)").all_inner_texts()]
    assert turns == sorted(turns)
    page.click("th[data-key=turns] button")
    turns = [float(t) for t in page.locator(
        "#task-table tbody tr td:nth-child(6)").all_inner_texts()]
    assert turns == sorted(turns, reverse=True) and turns[0] > turns[-1]

    # filters: by text (task id and failure reasons) and by group
    page.fill("#filter", "slugify")
    assert visible_tasks() == ["fix-slugify-whitespace"]
    assert page.locator("#count").inner_text() == "1 of 2 tasks"
    page.fill("#filter", "hostile reason")  # matches the reason, never runs it
    assert len(visible_tasks()) == 1
    hostile_task_id = visible_tasks()[0]
    page.fill("#filter", "")
    page.select_option("#group", "failing")
    failing = visible_tasks()
    assert hostile_task_id in failing and len(failing) == len(
        [c for c in page.locator("#task-table tbody tr td:nth-child(4)").all_inner_texts()
         if c.split("/")[0] != c.split("/")[1].split(" ")[0]])
    page.select_option("#group", "")
    assert len(visible_tasks()) == 2

    # a transcript expands, and the hostile one shows its text as text
    hostile_task = page.locator("details.task", has_text="hostile reason")
    hostile_task.locator("> summary").click()
    run = hostile_task.locator("details.run", has_text="hostile reason").first
    output = run.locator("pre", has_text="HOSTILE-OUTPUT")
    assert not output.is_visible()
    run.locator("> summary").click()
    assert output.is_visible()
    text = output.inner_text()
    assert "<script>alert(1)</script></script><img src=x onerror=\"alert(2)\">" in text
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2
    page.get_by_role("button", name="expand all").click()
    assert page.locator("#transcripts details:not([open])").count() == 0
    page.wait_for_timeout(300)
    assert view.dialogs == []
    assert view.errors == []
    assert view.requested == [] and view.routed == []


@pytest.mark.slow
@pytest.mark.browser
def test_a_baseline_runs_trace_expands_in_a_real_browser(sim_traces_report: Path,
                                                         chromium: Any) -> None:
    """No baseline transcript here: a baseline run expands to its trace, its tool calls
    shown, the hostile one as text; nothing logged, nothing requested."""
    view = _Page(chromium)
    page = view.page
    page.goto(sim_traces_report.as_uri())
    task = page.locator("details.task", has_text="HOSTILE-TRACE").first
    if not task.evaluate("d => d.open"):
        task.locator("> summary").click()
    run = task.locator(".col").nth(1).locator("details.run", has_text="HOSTILE-TRACE")
    call = run.locator("pre", has_text="HOSTILE-TRACE")
    assert not call.is_visible()
    run.locator("> summary").click()
    assert call.is_visible()
    assert run.locator(".trace-note").is_visible()
    assert run.locator(".bk", has_text="calls bash").count() >= 1
    assert run.locator(".et", has_text="turn 1").first.is_visible()
    assert call.inner_text() == f"HOSTILE-TRACE {HOSTILE} </details>"
    # every baseline run of every task shows a trace (each had one kept), none a transcript
    page.get_by_role("button", name="expand all").click()
    base_runs = page.locator(".col:nth-child(2) details.run")
    assert base_runs.count() == 4
    assert page.locator(".col:nth-child(2) details.run .trace-note").count() == 4
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    page.wait_for_timeout(300)
    assert view.dialogs == []
    assert view.errors == []
    assert view.requested == [] and view.routed == []


@pytest.mark.slow
@pytest.mark.browser
def test_the_csp_stops_markup_that_escaped_the_escaping(sim_report: Path, chromium: Any,
                                                        tmp_path: Path) -> None:
    """Defence in depth: were escaping to fail, the page's policy would still run and load
    nothing. Markup is spliced into the report raw, as a failed escape would leave it."""
    raw = ('<script>alert("inline")</script><img src="x" onerror="alert(\'handler\')">'
           '<img src="http://127.0.0.1:9/beacon.png"><a id="js" href="javascript:alert(3)">x</a>'
           '<div style="color: red">styled</div>')
    page_text = sim_report.read_text().replace("<footer>", raw + "<footer>", 1)
    broken = tmp_path / "broken.html"
    broken.write_text(page_text)
    view = _Page(chromium)
    view.page.goto(broken.as_uri())
    view.page.click("#js")
    view.page.wait_for_timeout(500)
    assert view.dialogs == []
    # the beacon was refused by the policy: nothing reached the network
    assert view.routed == []
    beacon = "http://127.0.0.1:9/beacon.png"
    assert view.requested == [beacon]
    assert sorted(view.csp_blocked) == sorted([beacon, broken.with_name("x").as_uri()])
    assert any("Content Security Policy" in e for e in view.errors), view.errors
    # the page's own script still ran under the same policy
    assert view.page.locator("#count").inner_text() == "2 of 2 tasks"


def test_without_chromium_the_browser_tests_skip_unless_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GATE_CHROMIUM", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.delenv("GATE_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        _browser()
    monkeypatch.setenv("GATE_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="GATE_REQUIRE_BROWSER=1 but no Chromium"):
        _browser()


@pytest.mark.parametrize("errored", ["one task", "every task"])
def test_a_task_whose_runs_all_errored_is_reported_not_an_internal_error(
        tmp_path: Path, errored: str) -> None:
    """A run whose agent install failed has only infra errors (no valid run to measure):
    `gate report` wrote no page and exited 3 with numpy's reshape error."""
    results = synthetic_results(reference_rates(3), 2, np.random.default_rng(0))
    first = results.runs[0].task
    for run in results.runs:
        if errored == "every task" or run.task == first:
            run.status, run.reason = "error", "infra: the agent's install failed (exit 5)"
    path = tmp_path / "r.json"
    write_results(path, results)
    code, out, err = _report(path, "--html", tmp_path / "r.html")
    assert code == 0, out + err
    assert "infra: the agent&#39;s install failed" in (tmp_path / "r.html").read_text()
