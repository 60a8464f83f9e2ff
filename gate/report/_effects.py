"""The skill-effect report (``gate compare RESULTS --conditions A,B``): text and Markdown.

The same rows in both; untrusted text (condition and task names from a results file) goes
through :func:`plain` (text) or :func:`md` (Markdown), so a file cannot break the table or
mention anyone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gate.compare import ConditionRow, Effect, EffectReport, MetricEffect
from gate.report._escape import md, plain
from gate.report._format import num, pct, pts, pval, rel, usd

Cell = Callable[[object], str]


def _ci_pts(e: Effect) -> str:
    if e.ci_low is None or e.ci_high is None:
        return "n/a"
    return f"{pts(e.ci_low)} to {pts(e.ci_high)}"


def condition_rows(rows: Sequence[ConditionRow], cell: Cell) -> list[list[str]]:
    return [[cell(r.condition), cell(", ".join(r.skills) or "none"), str(r.tasks),
             f"{r.passed}/{r.runs}" + (f" (+{r.errors} errors)" if r.errors else ""),
             pct(r.pass_rate), num(r.mean_turns), usd(r.mean_cost_usd), num(r.mean_tokens, 0),
             num(r.mean_prompt_per_request, 0), num(r.mean_duration_s)]
            for r in rows]


SCOPE = ("Each condition's row covers the tasks it ran (a negative-control task runs only "
         "control and full); each effect below compares only the tasks both conditions ran, "
         "paired by task.")

CONDITION_HEADERS = ["condition", "skills", "tasks", "passed", "pass rate", "mean turns",
                     "mean cost", "mean tokens", "prompt tokens / request", "mean wall s"]


def metric_rows(e: Effect) -> list[list[str]]:
    def value(m: MetricEffect, x: float) -> str:
        return usd(x) if m.name == "cost" else num(x, 1 if m.name in ("turns",
                                                                      "duration") else 0)

    return [[m.label, value(m, m.a), value(m, m.b), rel(m.change),
             f"{rel(m.ci_low)} to {rel(m.ci_high)}", pval(m.p_value),
             "significant" if m.significant else "—"] for m in e.metrics]


METRIC_HEADERS = ["metric (per run, tasks equally weighted)", "A", "B", "change", "CI",
                  "p", ""]


def task_rows(e: Effect, cell: Cell) -> list[list[str]]:
    return [[cell(t.task), f"{t.a_passed}/{t.a_runs}",
             f"{t.b_passed}/{t.b_runs}" if t.b_runs else "not run",
             pts(t.delta), num(t.a_turns), num(t.b_turns), usd(t.a_cost_usd),
             usd(t.b_cost_usd)] for t in e.per_task]


def _task_headers(e: Effect, cell: Cell) -> list[str]:
    return ["task", f"passed ({cell(e.a)})", f"passed ({cell(e.b)})", "Δ pass rate",
            f"turns ({cell(e.a)})", f"turns ({cell(e.b)})", f"cost ({cell(e.a)})",
            f"cost ({cell(e.b)})"]


def _block(e: Effect, cell: Cell) -> str | None:
    if not e.skills_block_bytes:
        return None
    a, b = e.skills_block_bytes.get(e.a, 0), e.skills_block_bytes.get(e.b, 0)
    return (f"skills block in the system prompt: {a:,} bytes ({cell(e.a)}) → {b:,} bytes "
            f"({cell(e.b)}), about {max(0, b - a) // 4:,} tokens more on every request "
            "(≈ 4 bytes a token)")


def _headline(e: Effect, cell: Cell) -> str:
    if e.delta is None:
        return f"{cell(e.b)} vs {cell(e.a)}: not measured (no task has valid runs under both)"
    return (f"{cell(e.b)} vs {cell(e.a)} on {e.tasks} task{'s' if e.tasks != 1 else ''}: "
            f"pass rate {pts(e.delta)} ({e.ci_level * 100:g} % CI {_ci_pts(e)}; p = "
            f"{pval(e.p_value)}, judged at α = {e.alpha:.3g}): {e.verdict}")


def render_effects_text(report: EffectReport) -> str:
    lines = [f"Skill effects in {plain(report.results)} ({plain(report.model)}); reference: "
             f"{plain(report.reference)}", ""]
    lines += _text_table(CONDITION_HEADERS, condition_rows(report.conditions, plain))
    lines.append(SCOPE)
    for note in report.notes:
        lines.append(f"Note: {plain(note)}")
    for e in report.effects:
        lines += ["", _headline(e, plain)]
        if e.metrics:
            lines += _text_table(METRIC_HEADERS, metric_rows(e))
        if (block := _block(e, plain)):
            lines.append(block)
        lines += _text_table(_task_headers(e, plain), task_rows(e, plain))
        if e.only_one:
            lines.append(f"not compared (only one of the two ran it): "
                         f"{', '.join(plain(t) for t in e.only_one)}")
    return "\n".join(lines) + "\n"


def _text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]
    return out


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(r) + " |" for r in rows)]


def render_effects_markdown(report: EffectReport) -> str:
    def cell(x: object) -> str:
        return str(md(x, 100))

    lines = [f"### Skill effects ({cell(report.model)}); reference: {cell(report.reference)}",
             ""]
    lines += _md_table(CONDITION_HEADERS, condition_rows(report.conditions, cell))
    lines += ["", SCOPE]
    for note in report.notes:
        lines += ["", f"Note: {cell(note)}"]
    for e in report.effects:
        lines += ["", f"**{_headline(e, cell)}**", ""]
        if e.metrics:
            lines += _md_table([str(md(h)) for h in METRIC_HEADERS], metric_rows(e))
        if (block := _block(e, cell)):
            lines += ["", block]
        lines += ["", "<details><summary>per task</summary>", ""]
        lines += _md_table(_task_headers(e, cell), task_rows(e, cell))
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
