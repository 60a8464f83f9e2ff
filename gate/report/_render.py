"""Rendering a ``Comparison``: the PR comment / step summary (Markdown) and a plain-text report.

The Markdown comes from a Jinja2 template shipped in the package (``gate/templates``). The
environment's ``finalize`` escapes *every* interpolated value as untrusted text unless the
renderer wrapped it in ``Markup`` — numbers it formatted itself, and the CI layer's own notes —
so forgetting a filter fails safe (escaped twice at worst), never open.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from gate.compare import AgentChange, Comparison, MetricResult, Resolution, TaskChange
from gate.core.metrics import BY_NAME, PERMUTED, PERMUTED_GATING, said
from gate.report._escape import (
    code_span,
    link_url,
    md,
    no_mentions,
    no_references,
    plain,
    slug,
)
from gate.report._format import (
    FILTERS,
    MINUS,
    change_interval,
    count,
    metric_delta,
    metric_value,
    num,
    p_is,
    pct,
    pts,
    pval,
    signed,
    usd,
)
from gate.report._plan import plan_lines, plan_summary
from gate.report._screen import (
    JOIN,
    LINK_MARK,
    lead_room,
    link_lines,
    split_lead,
    why_line,
)
from gate.report._skill_effect import skill_effect_context, skill_effect_lines

#: GitHub rejects comment bodies over 65,536 characters; the CI layer adds a hidden marker and
#: may redact secrets, so the body aims well below.
GITHUB_LIMIT = 65_536
BUDGET = 60_000
MAX_LIST = 30  # names per suite list
MAX_AGENT_ROWS = 20
MAX_NOTES = 10
MAX_TREND = 20

_ICON = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️", "unjudged": "⚪",
         "unclear": "⚠️"}
_WORD = {"pass": "no regression", "regression": "regression", "inconclusive": "inconclusive",
         "unjudged": "not judged by the simulator", "unclear": "unclear"}
_CHANGE = {
    "newly_failing": (0, "🔴 newly failing"), "worse": (1, "🟠 worse"),
    "newly_passing": (6, "🟢 newly passing"), "better": (7, "🟢 better"), "same": (8, "flaky"),
}
_STATUS = {
    "unmeasured": (2, "⚠️ no valid run in one arm"),
    "broken": (2, "⛔ broken: not run, not compared"),
    "changed": (3, "✏️ task changed (digest differs): not compared"),
    "added": (4, "➕ added: reported, not gated"), "removed": (5, "➖ removed"),
}
_MINUS = MINUS
_signed, _p_is = signed, p_is  # the formatter's, under the names this module has used


# ---- view model -------------------------------------------------------------------------------


def title_state(c: Comparison) -> str:
    """The title's state: compare's verdict, or ``unjudged`` when the simulator could not
    judge the pass rate and nothing blocked (compare's ``Comparison.unjudged``): never
    "✅ no regression" on what the gate did not see, whatever ``[ci] sim_unjudged`` exits;
    ``unclear`` when only a metric past its margin that its test could not settle kept it
    from a pass (exit 0, never a bare "inconclusive")."""
    if c.unjudged is not None and c.verdict != "regression":
        return "unjudged"
    if (c.verdict == "inconclusive" and c.exit_code == 0 and c.resolution is not None
            and c.resolution.unclear_reasons):
        return "unclear"  # only unclear (gate/compare/_unclear.py): it exits 0, says why
    return c.verdict


def verdict_words(c: Comparison) -> tuple[str, str]:
    """(icon, words) of the report's title: ``✅``, ``no regression``."""
    state = title_state(c)
    return _ICON[state], _WORD[state]


def _value(m: MetricResult, x: float | None) -> str:
    return metric_value(m.name, x)


def metric_change(m: MetricResult) -> str:
    """The change of a metric with compare's interval and p-values (trusted text; the
    comment shows ``<sub>``), and the row's caveat (compare's, built of checked values)."""
    change = _change_alone(m)
    return f"{change} · {m.caveat}" if m.caveat else change


def _change_alone(m: MetricResult) -> str:
    if m.delta is None:
        return m.note or "n/a"
    if m.name == "pass_rate":
        text = pts(m.delta)
        if m.ci_low is not None and m.ci_high is not None and m.ci_level is not None:
            text += (f" ({m.ci_level * 100:g} % CI {_signed(m.ci_low * 100)} to "
                     f"{_signed(m.ci_high * 100)})")
        ps = ", ".join(f"p<sub>{k}</sub> {pval(v)}" for k, v in m.p_values.items())
        return f"{text} · {ps}"
    row = BY_NAME[m.name]
    change = metric_delta(m.name, m.delta)
    if m.ci_low is not None and m.ci_high is not None and m.ci_level is not None:
        change += f" ({m.ci_level * 100:g} % CI {change_interval(m.name, (m.ci_low, m.ci_high))})"
    margin = ""
    if m.margin is not None:
        sign = _MINUS if row.higher_is_better else "+"
        margin = f" · margin {sign}{m.margin * 100:g}{' pts' if row.points else ' %'}"
    return f"{change} · p {pval(m.p_value)}{margin}"


def metric_verdict(m: MetricResult, resolution: Resolution | None = None, *,
                   icon: bool = True) -> str:
    """The metric's verdict with its icon (``icon=False``: the words alone). A metric that
    passed but could not have blocked (not gating, or its test blind at these runs:
    ``resolution.blind``) is never "✅ ok": next to 100 % → 0 % a green mark would be a lie."""
    text = _verdict_text(m, resolution)
    return text if icon else text.split(" ", 1)[1]


def _verdict_text(m: MetricResult, resolution: Resolution | None) -> str:
    if not m.comparable:
        return "⚠️ not comparable (reported, not gating)"
    if m.verdict == "unjudged":
        return "⚪ not judged by the simulator"
    if m.verdict == "n/a":
        return "— n/a"
    if m.verdict == "regression":
        return "❌ regression" if m.blocks else "⚠️ regression (not gating)"
    if m.verdict == "unclear":
        return "⚠️ unclear"
    if resolution is not None and m.name in resolution.blind:
        return "⚪ could not block (too few runs)"
    if not m.gating:
        return "⚪ reported, not gating"
    if m.significant and not m.exceeds_margin:
        return "✅ ok (within margin)"
    return "✅ ok"


def metric_verdict_short(m: MetricResult, resolution: Resolution | None = None) -> str:
    """The verdict for the first screen's narrow table: its icon and words without their
    explanation (the full table says it): ``⚪ could not block``, ``⚠️ not gating``."""
    text = _verdict_text(m, resolution)
    if text == "⚠️ regression (not gating)":
        return "⚠️ not gating"
    return text.split(" (", 1)[0]


def metric_change_short(m: MetricResult) -> str:
    """The change and its deciding p-value, for the first screen (the interval and margin
    are in the full table)."""
    if m.delta is None:
        return m.note or "n/a"
    change = metric_delta(m.name, m.delta)
    return change + (f" · {_p_is(m.p_value)}" if m.p_value is not None else "")


_change, _verdict = metric_change, metric_verdict


def _counts(tasks: Sequence[TaskChange], arm: str) -> str:
    compared = [t for t in tasks if t.status == "compared"]
    passed = sum(getattr(t, f"{arm}_passed") for t in compared)
    runs = sum(getattr(t, f"{arm}_runs") for t in compared)
    return f"{passed}/{runs}"


def _task_rank(t: TaskChange) -> tuple[int, float, str]:
    if t.status != "compared":
        return _STATUS[t.status][0], 1.0, t.task
    return _CHANGE[t.change or "same"][0], t.p_value if t.p_value is not None else 1.0, t.task


def _interesting(t: TaskChange) -> bool:
    return t.status != "compared" or t.change != "same" or t.flaky


def _task_row(t: TaskChange) -> dict[str, Any]:
    label = _CHANGE[t.change or "same"][1] if t.status == "compared" else _STATUS[t.status][1]

    def arm(passed: int, runs: int, errors: int, present: bool) -> str:
        if not present:
            return "—"
        return f"{passed}/{runs}" + (f" (+{errors} err)" if errors else "")

    in_b = t.status != "added" and (t.status != "broken"  # broken, and new: no baseline
                                     or t.baseline_runs + t.baseline_errors > 0)
    in_c = t.status not in ("removed", "broken")
    return {
        "task": md(t.task, 80),
        "baseline": Markup(arm(t.baseline_passed, t.baseline_runs, t.baseline_errors, in_b)),
        "candidate": Markup(arm(t.candidate_passed, t.candidate_runs, t.candidate_errors, in_c)),
        "p": Markup(pval(t.p_value) if t.p_value is not None else "—"),
        "change": Markup(label),
        "reasons": Markup("; ".join(md(r, 120) for r in t.reasons[:2])),
    }


def _names(items: Sequence[str]) -> Markup:
    shown = [md(x, 60) for x in items[:MAX_LIST]]
    more = f" and {len(items) - MAX_LIST} more" if len(items) > MAX_LIST else ""
    return Markup(", ".join(shown) + more)


def _note(text: str) -> Markup:
    """The CI layer's own lines: Markdown allowed, but one line, no raw HTML, and no mention
    or ``#123`` reference even when a line quotes untrusted text."""
    text = no_references(no_mentions(plain(text, 1000)))
    return Markup(text.replace("<", "&lt;").replace(">", "&gt;"))


def _trend(trend: Sequence[Mapping[str, Any]] | None) -> dict[str, Any] | None:
    if not trend:
        return None
    rows, labels, values = [], [], []
    for e in list(trend)[-MAX_TREND:]:
        rate = e.get("pass_rate")
        rate = float(rate) if isinstance(rate, int | float) else None
        commit = slug(e.get("commit") or "?", 7)

        def f(key: str, e: Mapping[str, Any] = e) -> float | None:
            v = e.get(key)
            return float(v) if isinstance(v, int | float) else None

        rows.append({"commit": Markup(commit), "date": md(str(e.get("created_at") or "")[:10]),
                     "pass_rate": Markup(pct(rate)), "cost": Markup(usd(f("cost_usd"))),
                     "cache": Markup(pct(f("cache_hit_rate"))),
                     "turns": Markup(num(f("mean_turns")))})
        if rate is not None:
            labels.append(f'"{commit}"')
            values.append(f"{rate * 100:.1f}")
    if not values:
        return {"rows": rows, "xs": None, "ys": None} if rows else None
    return {"rows": rows, "xs": Markup(", ".join(labels)), "ys": Markup(", ".join(values))}


def _method(c: Comparison) -> list[Markup]:
    s = c.settings
    lines = []
    if c.pass_rate_test is not None:
        t = c.pass_rate_test
        lines.append(Markup(
            f"Pass rate: exact stratified tests on the {count(c.suite.compared, 'compared task')} "
            f"(sum test {_p_is(t.p_sum)}, max test {_p_is(t.p_max)}); block if "
            f"{t.rule}. The interval is a stratified Newcombe (Wilson) interval."))
    gating = said(PERMUTED_GATING)
    reported = [m for m in PERMUTED if not m.gates]
    lines.append(Markup(
        f"{gating[:1].upper()}{gating[1:]}: within-task permutation tests "
        f"({s.get('permutations')} relabellings); block only if p ≤ "
        f"{float(str(s.get('metric_alpha'))) / 2:g} and the change exceeds the margin"
        + (f"; {said(reported)} by the same test, reported, never gating (it depends on "
           "the runner and the provider)." if reported else ".")))
    lines.append(Markup(
        f"Infra errors: baseline {pct(c.infra.baseline_rate)}, this PR "
        f"{pct(c.infra.candidate_rate)} (limit {pct(c.infra.max_rate)}; Fisher "
        f"{_p_is(c.infra.p_value)}). Infra errors (the provider's or the machine's) are never "
        "counted as failures; what the agent caused (a model with no price, a request it left "
        "in flight or cut, its own malformed or refused requests) fails its run."))
    block_on = s.get("block_on")
    if isinstance(block_on, list):
        lines.append(Markup("Metrics that can block: " + ", ".join(
            md(x) for x in block_on) + "."))
    return lines


def _overhead(c: Comparison) -> str | None:
    """Suite overhead on its own line: the warm starts' cache-write premium (never in cost
    per run), with each arm's total spend."""
    b, p = c.baseline, c.candidate
    if b.overhead_usd is None and p.overhead_usd is None:
        return None
    return (f"Suite overhead (cache writes of each run's first request of a shared prefix; not "
            f"in cost per run): this PR {usd(p.overhead_usd)} (total spend "
            f"{usd(p.spend_usd)}), baseline {usd(b.overhead_usd)} (total spend "
            f"{usd(b.spend_usd)}).")


def _schedule_reason(c: Comparison) -> str | None:
    return c.schedule.reason if c.schedule is not None else None


MAX_BEHAVIOUR_ROWS = 30


def _note_counts(notes: Mapping[str, int], runs: int) -> Markup:
    if not notes:
        return Markup("—")
    return Markup(" · ".join(f"{md(k, 80)} {n}/{runs}" for k, n in notes.items()))


def _behaviour_rows(c: Comparison) -> list[dict[str, Markup]]:
    """Tasks whose verify.sh noted something about how the agent worked (never gated)."""
    rows = [t for t in c.tasks if t.baseline_notes or t.candidate_notes]
    return [{"task": md(t.task, 80),
             "baseline": _note_counts(t.baseline_notes, t.baseline_runs),
             "candidate": _note_counts(t.candidate_notes, t.candidate_runs)}
            for t in rows[:MAX_BEHAVIOUR_ROWS]]


_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _agent_change(x: AgentChange) -> dict[str, Markup]:
    """``max_turns``: 30 → 1 (a setting's key in code, when it is a plain identifier), or an
    opaque part's shortened digests."""
    key = Markup(f"`{x.part}`") if _KEY.fullmatch(x.part) and x.digest is False else md(x.part, 40)
    return {"part": key + (Markup(" (digest)") if x.digest else Markup("")),
            "baseline": md(x.baseline or "—", 60), "candidate": md(x.candidate or "—", 60)}


def _screen(c: Comparison, notes: Sequence[str], mode: Markup | None,
            yardstick: Markup | None, run_url: Markup | None,
            command: str | None) -> dict[str, Any]:
    """The first screen (gate/report/_screen.py): the verdict's words and the judge's why,
    the lead lines that fit, the link line; and what did not fit, for the first collapsed
    block (compare's headline in full first, then the why's other reasons, the notes, and
    the yardstick's list as a list)."""
    words, why, rest = why_line(c)
    ours = [_note(n) for n in [*c.notes, *notes][:MAX_NOTES]]
    reason = _schedule_reason(c)
    lines = [*([Markup("⚠️ ") + md(reason, 500) + Markup(".")] if reason else []),
             *([mode] if mode else []),
             *([Markup(YARDSTICK_LEAD)] if yardstick else []), *ours]
    links = link_lines(run_url, command)
    shown = sum(1 for m in c.metrics if BY_NAME[m.name].first_screen)
    lead, more = split_lead(lines, lead_room(shown, len(links)), keep_last=bool(notes))
    said = [md(c.headline, 1500)] if c.why else [md(d, 600) for d in rest]
    if c.why and rest:
        said.append(Markup("Also: ") + Markup(JOIN).join(md(r, 200) for r in rest) + ".")
    return {"words": md(words, 40), "why": md(why, 200), "lead": lead,
            "more": [*said, *more, *([yardstick] if yardstick else [])],
            "links": _links(run_url, command, len(links)),
            "hard_break": Markup("\\")}  # one quote, a line each (a backslash line end)


#: the first screen's line when the PR changes what measures it (the list is collapsed)
YARDSTICK_LEAD = "⚠️ This PR changes what measures it: the list is under “How sure”."


def _links(run_url: Markup | None, command: str | None, lines: int) -> Markup | None:
    """The link line: the CI run and the command that reproduces the verdict locally (the
    report's link joins it once its URL is known: ``with_report_link``)."""
    run = Markup(f"[CI run]({run_url})") if run_url else None
    cmd = code_span(command, 200) if command else None
    if run is None and cmd is None:
        return None
    if run is not None and cmd is not None and lines == 2:
        return Markup(LINK_MARK) + run + Markup("\\\nLocally: ") + cmd
    said = Markup("locally: " if run else "Locally: ")
    parts = [*([run] if run else []), *([said + cmd] if cmd else [])]
    return Markup(LINK_MARK) + Markup(JOIN).join(parts)


def _context(c: Comparison, *, run_url: str | None, notes: Sequence[str],
             trend: Sequence[Mapping[str, Any]] | None, max_tasks: int | None,
             mode: Markup | None = None, yardstick: Markup | None = None,
             command: str | None = None) -> dict[str, Any]:
    metrics = []
    for m in c.metrics:
        b, p = _value(m, m.baseline), _value(m, m.candidate)
        if m.name == "pass_rate" and m.baseline is not None:
            b += f" ({_counts(c.tasks, 'baseline')})"
            p += f" ({_counts(c.tasks, 'candidate')})"
        metrics.append({"label": Markup(m.label), "baseline": Markup(b), "candidate": Markup(p),
                        "from": Markup(_value(m, m.baseline)), "to": Markup(_value(m, m.candidate)),
                        "change": Markup(_change(m)), "short": Markup(metric_change_short(m)),
                        "verdict": Markup(_verdict(m, c.resolution)),
                        "verdict_short": Markup(metric_verdict_short(m, c.resolution)),
                        "first_screen": BY_NAME[m.name].first_screen})
    interesting = sorted((t for t in c.tasks if _interesting(t)), key=_task_rank)
    shown = interesting if max_tasks is None else interesting[:max_tasks]
    kinds: dict[str, int] = {}
    for t in interesting:
        key = (t.change or "same").replace("_", " ") if t.status == "compared" else t.status
        if key != "same":
            kinds[key] = kinds.get(key, 0) + 1
    flaky = sum(1 for t in c.tasks if t.flaky)
    parts = [f"{n} {k}" for k, n in kinds.items()] + ([f"{flaky} flaky"] if flaky else [])
    suite_lines = [{"label": Markup(label), "names": _names(items)} for label, items in (
        ("broken, not run", c.suite.broken),
        ("added (not gated)", c.suite.added), ("removed", c.suite.removed),
        ("changed, not compared", c.suite.changed),
        ("no valid run in one arm", c.suite.unmeasured)) if items]
    suite_bits = [f"{c.suite.compared} of {count(c.suite.baseline_tasks, 'baseline task')} "
                  "compared"]
    suite_bits += [f"{len(x)} {w}" for w, x in (("broken", c.suite.broken),
                                                 ("added", c.suite.added),
                   ("removed", c.suite.removed), ("changed", c.suite.changed)) if x]
    if c.suite.digest_changed and len(suite_bits) == 1:
        suite_bits.append("suite digest changed")
    if c.health:  # gate/compare/_health.py: named here once, with why
        suite_bits.append(f"{count(len(c.health), 'task')} to look at")

    def arm(a: Any) -> dict[str, Any]:
        return {"model": md(a.model, 80), "kind": md(a.kind, 40),
                "fingerprint": md(a.fingerprint[:24], 40),
                "commit": md((a.commit or "unknown")[:12], 12),
                "created_at": md(a.created_at, 40),
                "runs_per_task": Markup(count(a.runs_per_task, "run") + "/task")}

    agent = [_agent_change(x) for x in c.agent_changes[:MAX_AGENT_ROWS]]
    n_agent = len(c.agent_changes)
    return {
        "icon": Markup(verdict_words(c)[0]), "verdict_word": Markup(verdict_words(c)[1]),
        **_screen(c, notes, mode, yardstick, link_url(run_url), command),
        "metrics": metrics,
        "power": Markup(c.power.statement) if c.power else None,
        "resolution": (md(c.resolution.statement, 600)  # blind: the headline says it
                       if c.resolution and c.resolution.detectable else None),
        "overhead": Markup(o) if (o := _overhead(c)) else None,
        "task_summary": Markup(", ".join(parts) if parts else "none"),
        "task_rows": [_task_row(t) for t in shown],
        "behaviour_rows": _behaviour_rows(c),
        "skill_effect": skill_effect_context(c),
        "tasks_hidden": len(interesting) - len(shown),
        "agent_summary": Markup(count(n_agent, "change") if n_agent else "unchanged"),
        "agent_changes": agent,
        "baseline": arm(c.baseline), "candidate": arm(c.candidate),
        "suite_summary": Markup(", ".join(suite_bits)), "suite_lines": suite_lines,
        "health": [md(h.line, 600) for h in c.health], "health_lead": Markup(HEALTH_LEAD),
        "plan": ({"summary": md(plan_summary(c.plan), 200),
                  "lines": [md(line, 2000) for line in plan_lines(c)]} if c.plan else None),
        "info": [{"name": Markup(i.name), "baseline": Markup(num(i.baseline)),
                  "candidate": Markup(num(i.candidate))} for i in c.info],
        "method": _method(c),
        "trend": _trend(trend),
        "run_url": link_url(run_url),
        "gate_version": md(c.candidate.gate_version, 30),
    }


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)
    return md(value)


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("gate", "templates"), undefined=StrictUndefined, autoescape=False,
        finalize=_finalize, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        auto_reload=False,  # a template loaded once is never read from disk again
    )
    env.filters.update(FILTERS)  # the one number formatter (gate/report/_format.py)
    return env


def preload_templates() -> None:
    """Read and compile every template now. The agent under test runs as the gate's user and
    could rewrite the installed package during the suite: what tells the verdict must already
    be in memory (``auto_reload`` off keeps it there)."""
    env = _env()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


def render_markdown(comparison: Comparison, *, run_url: str | None = None,
                    notes: Sequence[str] = (),
                    trend: Sequence[Mapping[str, Any]] | None = None,
                    yardstick: Markup | None = None, mode: Markup | None = None,
                    evidence: Markup | None = None, accepted: bool = False,
                    command: str | None = None) -> str:
    """The PR comment body (no hidden marker: the GitHub layer adds its own). ``mode``: the
    line saying what judged it, when not the stored baseline (a same-job A/B). ``command``:
    what reproduces the verdict locally, as a user types it (on the first screen's link
    line, with the CI run; the report's link joins it later, ``with_report_link``). ``evidence``:
    what the runs did (gate/pool/evidence.py, already escaped and bounded). ``accepted``: a
    regression a maintainer accepted, titled as such (the verdict and its numbers stay).

    Always under :data:`BUDGET` characters: when the per-task table would not fit, it shows
    the most important rows (newly failing first, by p-value) and says how many it left out.
    """
    template = _env().get_template("comment.md.j2")

    def render(max_tasks: int | None) -> str:
        return template.render(**_context(comparison, run_url=run_url, notes=notes,
                                          trend=trend, max_tasks=max_tasks, mode=mode,
                                          yardstick=yardstick, command=command),
                               same_job=mode is not None, evidence=evidence,
                               accepted=accepted and comparison.verdict == "regression")

    body = render(None)
    if len(body) <= BUDGET:
        return body
    lo, hi = 0, sum(1 for t in comparison.tasks if _interesting(t))
    while lo < hi:  # the most rows that fit
        mid = (lo + hi + 1) // 2
        if len(render(mid)) <= BUDGET:
            lo = mid
        else:
            hi = mid - 1
    return render(lo)


def render_summary(comparison: Comparison, *, run_url: str | None = None,
                   notes: Sequence[str] = (),
                   trend: Sequence[Mapping[str, Any]] | None = None,
                   accepted: bool = False, command: str | None = None) -> str:
    """The step summary: the same content as the comment, so the two never disagree."""
    return render_markdown(comparison, run_url=run_url, notes=notes, trend=trend,
                           accepted=accepted, command=command)


def render_text(comparison: Comparison) -> str:
    """A plain-text report for logs and terminals without rich."""
    c = comparison
    why = [f"Why: {plain(' · '.join(c.why), 1000)}"] if c.why else []
    lines = [plain(c.headline, 1000), *why, *(plain(n, 1000) for n in c.notes), ""]
    width = max(len(m.label) for m in c.metrics)
    for m in c.metrics:
        change = _change(m).replace("<sub>", "_").replace("</sub>", "")
        verdict = _verdict(m, c.resolution, icon=False)
        lines.append(f"  {m.label:<{width}}  {_value(m, m.baseline):>10} → "
                     f"{_value(m, m.candidate):>10}  {change}  [{verdict}]")
    if (reason := _schedule_reason(c)):
        lines += ["", f"Note: {plain(reason, 500)}"]
    if (overhead := _overhead(c)):
        lines += ["", overhead]
    if c.power:
        lines += ["", c.power.statement]
    lines += skill_effect_lines(c)
    if c.verdict == "inconclusive":
        lines += [""] + [f"  - {plain(r, 300)}" for r in c.reasons]
    interesting = sorted((t for t in c.tasks if _interesting(t)), key=_task_rank)
    if interesting:
        lines += ["", "Tasks:"]
        for t in interesting:
            row = _task_row(t)
            lines.append(f"  {plain(t.task, 80)}: {row['baseline']} → {row['candidate']}  "
                         f"p {row['p']}  {row['change']!s}"
                         + (f"  ({plain('; '.join(t.reasons[:2]), 160)})" if t.reasons else ""))
    if c.agent_changes:
        lines += ["", "Agent changes:"]
        lines += [f"  {plain(a.part, 40)}: {plain(a.baseline or '—', 60)} → "
                  f"{plain(a.candidate or '—', 60)}" for a in c.agent_changes]
    lines += ["", f"baseline {plain((c.baseline.commit or 'unknown')[:12])} "
              f"({plain(c.baseline.model, 80)}, {c.baseline.runs_per_task:g} runs/task) vs "
              f"{plain((c.candidate.commit or 'unknown')[:12])} "
              f"({plain(c.candidate.model, 80)}, {c.candidate.runs_per_task:g} runs/task)"]
    if (health := health_lines(c)):
        lines += ["", *health]
    if (plan := plan_lines(c)):
        lines += ["", *(plain(line, 2000) for line in plan)]
    return "\n".join(lines) + "\n"


#: what leads the suite-health lines in every view (gate/compare/_health.py)
HEALTH_LEAD = "Suite health, from the baseline (never part of the verdict):"


def health_lines(c: Comparison) -> list[str]:
    """The plain-text views' suite-health lines (the terminal's, render_text's): the lead and a
    task a line; none when every task is healthy."""
    if not c.health:
        return []
    return [HEALTH_LEAD, *(f"  - {plain(h.line, 600)}" for h in c.health)]


# the views' shared pieces under their public names (gate.report exports them): the terminal
# (gate.cli) and the evidence section lay out the same rows as the comment
task_row, task_rank, is_interesting = _task_row, _task_rank, _interesting
overhead_note, schedule_note, template_env = _overhead, _schedule_reason, _env
