"""The PR comment: complete, escaped, and under GitHub's size limit."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from gate.compare import Comparison, compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import Results, TaskInfo, summarize
from gate.report import (
    BUDGET,
    GITHUB_LIMIT,
    defuse_markdown,
    md,
    render_markdown,
    render_summary,
    render_text,
)

FAST = GateSettings(permutations=999, power_simulations=50)
HOSTILE = ("</details><img src=x onerror=alert(1)> @everyone | col | `code` "
           "[link](javascript:alert(1)) **bold**\nsecond line <!-- x -->")


def _comparison(seed: int = 0, broken: bool = True) -> Comparison:
    rng = np.random.default_rng(seed)
    rates = reference_rates()
    cand = [0.0 if broken and i in (0, 6) else r for i, r in enumerate(rates)]
    return compare(synthetic_results(rates, 20, rng),
                   synthetic_results(cand, 5, rng, cost_scale=1.5), FAST)


def _hostile_results(base: Results) -> tuple[Results, Results]:
    """The same suite with a hostile task id, reason, model name and parts in the candidate."""
    evil = "evil|</details>@everyone`x`"

    def rename(res: Results, reason: str | None) -> Results:
        tasks = {(evil if t == "t00" else t): info for t, info in res.suite.tasks.items()}
        runs = [r.model_copy(update={"task": evil if r.task == "t00" else r.task,
                                     "status": "failed" if r.task == "t00" else r.status,
                                     "reason": reason if r.task == "t00" else r.reason})
                for r in res.runs]
        return res.model_copy(update={"suite": res.suite.model_copy(update={"tasks": tasks}),
                                      "runs": runs, "summary": summarize(runs)})

    cand = rename(base, HOSTILE)
    cand = cand.model_copy(update={"model": "@octocat <b>model</b> | x"})
    agent = cand.agent.model_copy(update={"parts": {"model": "@here </details>",
                                                    "`tools`|": "sha256:" + "f" * 16}})
    cand = cand.model_copy(update={"agent": agent})
    base = rename(base, None)
    base = base.model_copy(update={"runs": [r.model_copy(update={"status": "passed"})
                                            if r.task == evil else r for r in base.runs]})
    return base, cand


def test_comment_has_verdict_first_then_metrics_then_details() -> None:
    c = _comparison()
    body = render_markdown(c, run_url="https://github.com/o/r/actions/runs/7",
                           notes=["This PR edits `baseline.json`; it was judged against the "
                                  "base branch's."])
    lines = body.splitlines()
    assert lines[0].startswith("### ❌ agent-gate: regression")
    assert "**Regression:" in lines[1]
    assert body.index("| pass rate |") < body.index("<details><summary>Per-task")
    for name in ("pass rate", "mean turns", "cost per run", "cache-hit rate"):
        assert f"| {name} |" in body
    assert "95 % CI" in body and "80 % power" in body
    assert "[CI run](https://github.com/o/r/actions/runs/7)" in body
    assert "> This PR edits `baseline.json`" in body  # our own notes keep their Markdown
    assert body.count("<details>") == body.count("</details>")
    assert render_summary(c) == render_markdown(c)


def test_hostile_text_is_escaped_everywhere() -> None:
    rng = np.random.default_rng(1)
    base, cand = _hostile_results(synthetic_results(reference_rates(), 5, rng))
    c = compare(base, cand, FAST)
    body = render_markdown(c, notes=["note\nwith a newline <script>"])
    assert "<img" not in body and "<script>" not in body and "<b>" not in body
    assert "<!--" not in body
    assert body.count("<details>") == body.count("</details>") == 5
    assert re.search(r"@(everyone|here|octocat)", body) is None  # a ZWJ follows every @
    assert "@\u200deveryone" in body
    assert "`x`" not in body and "`code`" not in body and "`tools`" not in body
    assert "[link](javascript" not in body and "\\[link\\]" in body
    # a task row keeps its 6 columns: no raw | from the data
    task_rows = [ln for ln in body.splitlines() if ln.startswith("| evil")]
    assert task_rows and all(ln.count("|") == 7 for ln in task_rows)
    assert "second line" in body and "\nsecond line" not in body


def test_escape_filter() -> None:
    assert md("a|b") == "a&#124;b"
    assert md("<x>") == "&lt;x&gt;"
    assert md("@all") == "@\u200dall"
    assert md("`x`") == "&#96;x&#96;"
    assert md("a\nb\r\nc") == "a b c"
    assert md("*x* _y_ [z]") == "\\*x\\* \\_y\\_ \\[z\\]"
    assert len(md("x" * 1000, limit=50)) == 50


def test_escape_filter_is_idempotent_on_mentions() -> None:
    assert md("@\u200dall") == "@\u200dall"  # one joiner, never two
    assert md(md("@all")) == "@\u200dall"


def test_escape_filter_neutralises_references_and_bare_urls() -> None:
    """``#123``, ``owner/repo#123``, ``GH-123`` would link (and notify) another issue; a bare
    URL would become a link. A joiner breaks each; entities stay entities."""
    out = md("fixes #12, acme/x#3 and GH-4; see https://evil.example/x or www.evil.com "
             "or HTTP://E.example a|b `c`")
    assert re.search(r"(?<!&)#\d|GH-\d|https?://|www\.", out, re.IGNORECASE) is None
    for part in ("#\u200d12", "acme/x#\u200d3", "GH-\u200d4", "https:\u200d//evil.example/x",
                 "www\u200d.evil.com", "HTTP:\u200d//E.example", "a&#124;b", "&#96;c&#96;"):
        assert part in out, part
    assert md(out) == out and "\u200d\u200d" not in md(str(out))  # one joiner, never two
    assert md("issue # 5, C#, 100%, #tag") == "issue # 5, C#, 100%, #tag"


def test_hostile_references_in_a_report_render_to_no_link() -> None:
    rng = np.random.default_rng(1)
    base = synthetic_results(reference_rates(), 5, rng)
    cand = base.model_copy(update={"model": "see #1 https://evil.example www.evil.com GH-2"})
    body = render_markdown(compare(base, cand, FAST))
    assert "#1 " not in body and "https://evil" not in body and "www.evil" not in body
    assert "GH-2" not in body and "evil.example" in body
    # the CI layer's notes keep their Markdown, but a quoted mention or reference is inert
    noted = render_markdown(compare(base, cand, FAST), notes=["`x.toml` says @everyone #12"])
    assert "> `x.toml` says @\u200deveryone #\u200d12" in noted


def test_defuse_leaves_every_report_we_render_unchanged() -> None:
    """The comment job re-checks the uploaded report; ours must survive it byte for byte."""
    rng = np.random.default_rng(1)
    base, cand = _hostile_results(synthetic_results(reference_rates(), 5, rng))
    trend = [{"commit": f"{i:07d}", "created_at": f"2026-11-2{i}T00:00:00Z", "pass_rate": 0.7,
              "cost_usd": 1.5, "cache_hit_rate": 0.8, "mean_turns": 7.0} for i in range(3)]
    bodies = [render_markdown(_comparison(), run_url="https://github.com/o/r/actions/runs/7",
                              notes=["edits `baseline.json` <b>"], trend=trend),
              render_markdown(_comparison(broken=False)),
              render_markdown(compare(base, cand, FAST), notes=["x <script>alert(1)</script>"]),
              render_markdown(_big_comparison(60))]
    for body in bodies:
        assert "<details><summary>" in body and "<sub>" in body
        assert defuse_markdown(body) == body


def test_defuse_makes_a_hostile_report_inert() -> None:
    hostile = ("### ✅ agent-gate: no regression\n\n@everyone &#64;here &#x40;team &commat;x "
               "`@octocat`\n<img src=x onerror=alert(1)>\n<!-- agent-gate:comment -->\n"
               "<!--agent-gate:comment-->\n<script>alert(1)</script>\n<SCRIPT>x</SCRIPT>\n"
               "<details open ontoggle=alert(1)><summary>ok</summary>\n\nhidden\n\n</details>"
               "\n<br/> <sup>1</sup> <![CDATA[x]]> <?php ?> <a href=x>y</a> 1 < 2\n")
    out = defuse_markdown(hostile)
    assert defuse_markdown(out) == out
    assert re.search(r"@(everyone|here|team|x|octocat)", out) is None
    assert "&#64;" not in out and "&#x40;" not in out and "&commat;" not in out
    for raw in ("<img", "<!--", "<script", "<SCRIPT", "<details open", "<![CDATA", "<?php",
                "<a "):
        assert raw not in out, raw
    assert "&lt;img src=x onerror=alert(1)>" in out and "&lt;!-- agent-gate:comment -->" in out
    assert "<summary>ok</summary>" in out and "</details>" in out and "<br/>" in out
    assert "<sup>1</sup>" in out and "1 < 2" in out
    refs = defuse_markdown("closes #12, o/r#3, GH-4, &#35;5 &num;6 &#x23;7; a&#124;b #x")
    assert re.search(r"(?<!&)#\d|GH-\d|&#0*35;|&num;|&#x0*23;", refs, re.IGNORECASE) is None
    assert "a&#124;b #x" in refs and defuse_markdown(refs) == refs
    import markdown_it  # rich, a dependency, requires markdown-it-py
    html = markdown_it.MarkdownIt("commonmark").render(out)
    assert set(re.findall(r"<([a-z0-9]+)", html)) <= {
        "h3", "p", "code", "details", "summary", "br", "sup"}


def _big_comparison(n: int = 500) -> Comparison:
    """Every one of n tasks changed: half broken, the rest added/removed/changed/flaky."""
    rng = np.random.default_rng(2)
    long_ids = [f"task-{i:03d}-" + "x" * 60 for i in range(n)]
    base = synthetic_results([0.9] * n, 3, rng)
    cand = synthetic_results([0.0 if i % 2 else 0.5 for i in range(n)], 3, rng)

    def rename(res: Results, drop: int, digest_from: int) -> Results:
        tasks = {long_ids[int(t[1:])]: TaskInfo(digest=("z" if int(t[1:]) >= digest_from
                                                        else info.digest))
                 for t, info in res.suite.tasks.items() if int(t[1:]) != drop}
        runs = [r.model_copy(update={"task": long_ids[int(r.task[1:])],
                                     "reason": "AssertionError: " + "y" * 300})
                for r in res.runs if int(r.task[1:]) != drop]
        return res.model_copy(update={"suite": res.suite.model_copy(update={"tasks": tasks}),
                                      "runs": runs, "summary": summarize(runs)})

    return compare(rename(base, n - 1, n), rename(cand, 0, n - 20), FAST)


@pytest.mark.slow
def test_500_changed_tasks_stay_under_githubs_limit() -> None:
    c = _big_comparison()
    assert sum(1 for t in c.tasks if t.status == "compared" and t.change != "same") > 200
    notes = ["n" * 900] * 12
    trend = [{"commit": "a" * 40, "created_at": "2026-11-29T00:00:00Z", "pass_rate": 0.8,
              "cost_usd": 1.0, "cache_hit_rate": 0.7, "mean_turns": 8.0}] * 50
    body = render_markdown(c, run_url="https://example.com/run", notes=notes, trend=trend)
    assert len(body) < GITHUB_LIMIT
    assert "more tasks not shown" in body
    assert "- removed: task-000-" in body and "- added (not gated): task-499-" in body
    assert "built-in method" not in body and " and " in body.split("changed, not compared:")[1]
    assert body.count("<details>") == body.count("</details>")
    # the most important rows survive the cut: newly failing first
    first_row = next(ln for ln in body.splitlines() if ln.startswith("| task-"))
    assert "newly failing" in first_row


def test_trend_renders_a_mermaid_chart_with_safe_labels() -> None:
    c = _comparison(broken=False)
    trend = [{"commit": f"{i:07d}\"];evil", "created_at": f"2026-11-2{i}T00:00:00Z",
              "pass_rate": 0.7 + i / 100, "cost_usd": 1.5, "cache_hit_rate": 0.8,
              "mean_turns": 7.0} for i in range(5)]
    body = render_markdown(c, trend=trend)
    assert "```mermaid" in body and "xychart-beta" in body
    assert 'x-axis ["0000000", "0000001"' in body
    assert "evil" not in body
    assert "line [70.0, 71.0, 72.0, 73.0, 74.0]" in body
    assert "```mermaid" not in render_markdown(c)


def test_plain_text_report() -> None:
    c = _comparison()
    text = render_text(c)
    assert text.startswith("Regression: ") and "REGRESSION" not in text
    assert "pass rate" in text and "cost per run" in text and "newly failing" in text
    assert "<sub>" not in text


@pytest.mark.parametrize("verdict", ["pass", "inconclusive"])
def test_other_verdicts_render(verdict: str) -> None:
    rng = np.random.default_rng(3)
    rates = reference_rates()
    base = synthetic_results(rates, 5, rng)
    cand = synthetic_results(rates, 5, rng, error_rate=0.5 if verdict == "inconclusive" else 0)
    c = compare(base, cand, FAST)
    assert c.verdict == verdict
    body = render_markdown(c)
    icon = {"pass": "✅ agent-gate: no regression", "inconclusive": "⚠️ agent-gate: inconclusive"}
    assert body.startswith("### " + icon[verdict])
    if verdict == "inconclusive":
        assert "infra errors" in body


def test_templates_ship_with_the_package() -> None:
    from importlib.resources import files

    assert files("gate").joinpath("templates/comment.md.j2").is_file()


def test_hostile_comment_renders_to_clean_html() -> None:
    """Render with a CommonMark + GFM-tables parser: only our own tags, every row whole."""
    import markdown_it  # rich, a dependency, requires markdown-it-py
    rng = np.random.default_rng(1)
    base, cand = _hostile_results(synthetic_results(reference_rates(), 5, rng))
    body = render_markdown(compare(base, cand, FAST), notes=["x <script>alert(1)</script>"],
                           trend=[{"commit": "<img src=x>", "pass_rate": 0.5}])
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(body)
    tags = set(re.findall(r"<([a-z0-9]+)", html))
    assert tags <= {"h3", "p", "strong", "blockquote", "table", "thead", "tbody", "tr", "th",
                    "td", "details", "summary", "ul", "li", "sub", "pre", "code", "a"}
    for table in re.findall(r"<table>.*?</table>", html, re.S):
        widths = {len(re.findall(r"<t[hd][ >]", row))
                  for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)}
        assert len(widths) == 1


def test_behaviour_notes_are_counted_and_escaped() -> None:
    rng = np.random.default_rng(3)
    base = synthetic_results(reference_rates(6), 4, rng)
    cand = synthetic_results(reference_rates(6), 2, rng)

    def noted(res, note_for):  # type: ignore[no-untyped-def]
        return res.model_copy(update={"runs": [
            r.model_copy(update={"notes": note_for(r)}) if r.task == "t00" else r
            for r in res.runs]})

    base = noted(base, lambda r: "offloaded=yes" if r.replication < 3 else "offloaded=no")
    cand = noted(cand, lambda r: "<img src=x onerror=alert(1)> @team offloaded=no")
    c = compare(base, cand, GateSettings(power_simulations=0))
    (t00,) = [t for t in c.tasks if t.task == "t00"]
    assert t00.baseline_notes == {"offloaded=yes": 3, "offloaded=no": 1}
    body = render_markdown(c)
    assert "Behaviour notes from verify (1 task;" in body
    assert "offloaded=yes 3/4 · offloaded=no 1/4" in body
    assert "<img" not in body and "@team" not in body


def test_a_name_is_inline_code_only_when_nothing_can_hide_or_break_out_in_it(
        tmp_path: Path) -> None:
    """Branch names and labels go into code spans (no mention, no link there); a name with a
    backtick, a newline or a bidi override is escaped text instead, in every place that does so."""
    from gate.core.config import GateConfig
    from gate.execution.yardstick import SettingChange, Yardstick
    from gate.report import code_span as _code
    from gate.report._escape import code_span

    def note(label: str) -> str:
        ys = Yardstick(ref="r", label=label, config=GateConfig(root=tmp_path),
                       tasks_dir=tmp_path, baseline_rel="baseline.json", baseline_text=None,
                       history_text=None, settings=[SettingChange("[gate].alpha", 0.05, 0.5)])
        return str(ys.note())

    assert code_span("main") == "`main`" and _code("main") == "`main`"
    assert "judged with `main`'s" in note("main")
    for name in ("ma\u202ein", "a`b @x", "a\nb", "x" * 101):
        for out in (str(code_span(name)), _code(name), note(name).split("'s tasks")[0]):
            assert "`" + name not in out, out
            assert "\u202e" not in out and "\nb" not in out


@pytest.mark.slow
def test_a_pr_cannot_push_the_report_out_of_the_comment_with_yardstick_lines(
        tmp_path: Path) -> None:
    """However many measuring things a PR changes, and however much escaping their names
    need, the yardstick paragraph stays bounded and the report under GitHub's limit."""
    from gate.core.config import GateConfig
    from gate.execution.yardstick import NOTE_BUDGET, SettingChange, TaskChange, Yardstick

    bad = "|<@" * 100
    ys = Yardstick(ref="r", label="main", config=GateConfig(root=tmp_path), tasks_dir=tmp_path,
                   baseline_rel="baseline.json", baseline_text=None, history_text=None,
                   settings=[SettingChange(f"[ci].k{i}", bad, bad) for i in range(30)],
                   tasks=[TaskChange(f"t{i}", "broken", bad, False) for i in range(100)],
                   workflows=[f".github/workflows/{bad}{i}" for i in range(100)],
                   files=[bad, bad], unreadable=bad)
    note = ys.note()
    assert note is not None and len(note) < NOTE_BUDGET + 500
    assert "more (the job's log lists them all)" in note
    body = render_markdown(_big_comparison(), notes=["n" * 900] * 12, yardstick=note)
    assert len(body) <= BUDGET
    assert "| pass rate |" in body and "newly failing" in body


def test_the_first_screen_fits_a_phone_whatever_the_notes() -> None:
    """Ten notes and the action line: the first screen stays at 15 lines and tables of four
    columns; what did not fit is in the first collapsed block, the action line stays."""
    notes = [f"note {i}: something the CI layer said" for i in range(9)]
    action = "A maintainer who accepts this regression can add the `x` label."
    body = render_markdown(_comparison(), notes=[*notes, action])
    head = body[:body.index("<details>")]
    lines = head[:-1].split("\n")
    assert len(lines) <= 15, head
    assert all(ln.count("|") <= 5 for ln in lines if ln.startswith("|"))
    assert f"> {action}" in head
    first = body.index("<details>")
    assert "note 8: something" in body[first:body.index("</details>")]  # collapsed, kept
    assert "more notes</summary>" in body


@pytest.mark.parametrize("fields, words", [
    ({"comparable": False}, "not comparable (reported, not gating)"),
    ({"verdict": "regression", "blocks": False}, "regression (not gating)"),
    ({"verdict": "regression", "blocks": True}, "regression"),
    ({}, "ok"),
])
def test_a_verdict_without_its_icon_is_its_words_alone(fields: dict[str, object],
                                                       words: str) -> None:
    """The terminal table, `gate compare`'s and the HTML page's verdict column drop the icon
    by its own width (⚠️ is two code points: a cut by count left a stray character)."""
    from gate.compare import MetricResult
    from gate.report import metric_verdict

    m = MetricResult(name="cost", label="cost", baseline=1.0, candidate=1.0, delta=0.0,
                     **fields)  # type: ignore[arg-type]
    assert metric_verdict(m, icon=False) == words
    assert metric_verdict(m).endswith(" " + words)


def test_the_yardstick_note_is_a_list_one_item_a_line(tmp_path: Path) -> None:
    """The changes a PR makes to what measures it are a Markdown list inside the quote, each
    item on its own ``> - `` line: never joined onto the paragraph's line, where GitHub shows
    a literal ``> -``."""
    from gate.core.config import GateConfig
    from gate.execution.yardstick import SettingChange, Yardstick

    ys = Yardstick(ref="r", label="main", config=GateConfig(root=tmp_path), tasks_dir=tmp_path,
                   baseline_rel="baseline.json", baseline_text=None, history_text=None,
                   settings=[SettingChange("[gate].alpha", 0.01, 0.5),
                             SettingChange("[suite].replications", 3, 1)],
                   files=["gate-history.jsonl"])
    body = render_markdown(_comparison(), yardstick=ys.note())
    lines = body.splitlines()
    items = [ln for ln in lines if ln.startswith("> - ")]
    assert items == ["> - `[gate].alpha`: 0.01 → 0.5", "> - `[suite].replications`: 3 → 1",
                     "> - gate-history.jsonl: edited by this PR (the base's copy is used; main "
                     "refreshes its own)"]
    intro = lines.index(items[0]) - 1
    assert lines[intro].startswith("> This PR changes what measures it.")
    assert lines[intro].endswith("apply after the merge:")
    assert not any("> -" in ln[2:] for ln in lines if ln.startswith(">")), body
