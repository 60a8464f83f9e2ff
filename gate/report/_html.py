"""``gate report --html``: one self-contained HTML file a person opens to see *why*.

The verdict, the four metrics with intervals, a per-task table that sorts and filters, inline
SVG plots, and every run's transcript, the PR's beside the baseline's. No external asset, no
remote script: it works offline and as a CI artifact.

Everything in it that came from a results file or a transcript is untrusted text. It stays
text three times over: Jinja2 autoescapes every value; the data the page script reads sits in
a ``<script type="application/json">`` block with ``<``, ``>`` and ``&`` as JSON escapes, so
no ``</script>`` can close it; and a Content-Security-Policy allows only the page's own script
and style (by hash), so even markup that escaped the escaping could run nothing and load
nothing.

Transcripts are read only from the ``<stem>.transcripts/`` directory beside the results file
that ``gate run`` writes (by the recorded file's name): a results file cannot make the report
embed any other file of the machine it is rendered on. A baseline run with no transcript here
(a pooled ``baseline.json`` keeps none) is shown as its trace (gate/core/traces.py), from the traces
main's refresh keeps next to the baseline, when one was kept for it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from gate._files import MiB, read_head
from gate.compare import (
    Comparison,
    EffectReport,
    Intervals,
    MetricResult,
    TaskChange,
    intervals,
    plain_runs,
)
from gate.core.metrics import METRICS, said
from gate.core.results import (
    Results,
    RunResult,
    net_raw_note,
    runs_by_task,
    transcripts_dir,
    valid_runs,
)
from gate.core.traces import Trace
from gate.report._format import FILTERS, interval, metric_value, pct, usd
from gate.report._plan import plan_lines, plan_summary
from gate.report._render import HEALTH_LEAD, metric_change, metric_verdict, verdict_words

TRANSCRIPT_LIMIT = 8 * MiB  # bytes of one transcript file read
FIELD_LIMIT = 20_000  # characters of one transcript field shown (the runner clips at 8,000)
MAX_RUNS = 20  # runs shown per task and arm (a pooled baseline keeps 20)
MAX_PLOT_TASKS = 200  # rows of the per-task pass-rate plot

# ---- transcripts --------------------------------------------------------------------------


@dataclass
class Event:
    """One transcript line, as the page shows it: a title and labelled blocks of text."""

    kind: str
    title: str
    blocks: list[tuple[str, str]] = field(default_factory=list)
    error: bool = False


@dataclass
class RunView:
    replication: int
    status: str
    reason: str | None
    turns: int
    cost: str
    notes: str | None
    events: list[Event] | None  # None: no transcript to show
    missing: str | None = None  # why there is no transcript
    condition: str | None = None  # the skill condition it ran under (gate run --condition)
    trace: TraceView | None = None  # no transcript: the run's kept trace (gate/core/traces.py)
    estimated: str | None = None  # part of its usage is an estimate (a stream the agent cut)
    install_s: float | None = None  # waited for the agent's install ([agent] install)


@dataclass
class TraceTurn:
    """One turn of a trace as the page shows it: a title with its usage, and its calls."""

    title: str
    calls: list[tuple[str, str, str | None, bool]]  # name, input in brief, result tail, error
    more: int = 0
    omitted: int = 0  # turns dropped to fit, shown before this one


@dataclass
class TraceView:
    """A baseline run's trace (no transcript of it exists here): its turns in brief, its
    outcome, final message and verify's tail."""

    turns: list[TraceTurn]
    failure: str | None
    final: str
    verify: str
    refresh: str | None
    verifier_files: dict[str, str] = field(default_factory=dict)  # name → its tail


def _trace_view(trace: Trace) -> TraceView:
    turns = []
    for i, t in enumerate(trace.turns):
        usage = " · ".join(f"{k} {v:,}" for k, v in (
            ("in", t.input), ("out", t.output), ("cache write", t.write),
            ("cache read", t.read)))
        turns.append(TraceTurn(
            f"turn {t.n}" + (f" · {t.stop}" if t.stop else "") + f" · {usage}",
            [(c.name, c.arg, c.result, c.error) for c in t.calls], t.more_calls,
            trace.omitted if trace.omitted and i == trace.omitted_at else 0))
    return TraceView(turns, trace.failure, trace.final, trace.verify, trace.refresh,
                     trace.verifier_files)


TraceKey = tuple[str, str | None, str | None, int]


def _trace_index(traces: Sequence[Trace]) -> dict[TraceKey, Trace]:
    """Traces by the run they record: task, condition, refresh, replication."""
    return {(t.task, t.condition, t.refresh, t.replication): t for t in traces}


_RAN_AS = re.compile(r"-r(\d+)\.jsonl$")


def _trace_key(run: RunResult) -> TraceKey:
    """The key of ``run``'s trace. A pooled baseline numbers its runs afresh, but each keeps
    the transcript name it ran under (``<task>[-<arm>][-<condition>]-r<n>.jsonl``, the
    runner's): ``n`` is the replication its trace records."""
    name = Path(run.transcript.replace("\\", "/")).name if run.transcript else ""
    m = _RAN_AS.search(name)
    return (run.task, run.condition, run.refresh, int(m.group(1)) if m else run.replication)


def _clip(text: str) -> str:
    if len(text) <= FIELD_LIMIT:
        return text
    cut = len(text) - FIELD_LIMIT
    return f"{text[:FIELD_LIMIT // 2]}\n[… {cut:,} characters cut …]\n{text[-FIELD_LIMIT // 2:]}"


def _text(value: object) -> str:
    if isinstance(value, str):
        return _clip(value)
    return _clip(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _input_text(value: object) -> str:
    """A tool call's input as a person reads it: a lone string argument (bash's command, a
    path) as it is, not as a JSON string with escaped newlines."""
    if isinstance(value, Mapping) and value and all(isinstance(v, str) for v in value.values()):
        if len(value) == 1:
            return _clip(next(iter(value.values())))
        return _clip("\n".join(f"{k}: {v}" for k, v in value.items()))
    return _text(value)


def _usage_line(usage: object) -> str:
    if not isinstance(usage, Mapping):
        return ""
    parts = [(k, usage.get(f"{k}_tokens" if k in ("input", "output") else k)) for k in
             ("input", "output", "cache_creation_input_tokens", "cache_read_input_tokens")]
    names = {"input": "in", "output": "out", "cache_creation_input_tokens": "cache write",
             "cache_read_input_tokens": "cache read"}
    return " · ".join(f"{names[k]} {v:,}" for k, v in parts if isinstance(v, int))


def _event(raw: Mapping[str, Any]) -> Event:
    kind = str(raw.get("type", "?"))
    if kind == "model":
        blocks: list[tuple[str, str]] = []
        content = raw.get("content")
        for b in content if isinstance(content, list) else []:
            if not isinstance(b, Mapping):
                continue
            if b.get("type") == "text":
                blocks.append(("text", _text(b.get("text", ""))))
            elif b.get("type") == "tool_use":
                blocks.append((f"calls {b.get('name')}", _input_text(b.get("input"))))
            elif b.get("type") == "thinking":
                blocks.append(("thinking", _text(b.get("thinking", ""))))
            else:
                blocks.append((str(b.get("type")), _text(dict(b))))
        usage = _usage_line(raw.get("usage"))
        title = f"turn {raw.get('turn', '?')} · {raw.get('stop_reason')}"
        return Event("model", title + (f" · {usage}" if usage else ""), blocks)
    if kind == "tool":
        err = bool(raw.get("is_error"))
        # its input is in the turn that called it, just above
        return Event("tool", f"{raw.get('name')} returned" + (" an error" if err else ""),
                     [("output", _text(raw.get("output", "")))], error=err)
    if kind in ("setup", "verify", "oracle", "command"):
        rc = raw.get("returncode")
        title = f"{kind} · exit {rc}" + (" · timed out" if raw.get("timed_out") else "")
        blocks = [(k, _text(raw[k])) for k in ("output", "stdout", "stderr", "score", "files")
                  if raw.get(k) not in (None, "")]
        return Event(kind, title, blocks, error=rc not in (0, None) or bool(raw.get("timed_out")))
    if kind == "final":
        blocks = [("message", _text(raw.get("message") or ""))]
        blocks += [(k, _text(raw[k])) for k in ("failure", "infra_error") if raw.get(k)]
        return Event("final", "final message", blocks,
                     error=bool(raw.get("failure") or raw.get("infra_error")))
    if kind == "meter_refused":
        return Event(kind, "requests the meter refused", [("requests", _text(raw.get("requests")))],
                     error=True)
    rest = {k: v for k, v in raw.items() if k not in ("t", "type")}
    return Event("other", kind, [("event", _text(rest))])


def read_transcript(run: RunResult, results_path: Path | None) -> tuple[list[Event] | None, str]:
    """The run's transcript as events, or None and why not. Read only from the transcripts
    directory beside the results file, by the recorded file's name; bounded; a line that is
    not JSON is shown as it is."""
    if not run.transcript:
        return None, "no transcript recorded (run with --no-transcripts?)"
    if results_path is None:
        return None, "transcript not available"
    folder = transcripts_dir(results_path)
    name = Path(run.transcript.replace("\\", "/")).name
    if not name.endswith(".jsonl") or name.startswith("."):
        return None, "transcript not available (not a transcript file name)"
    data = read_head(folder / name, TRANSCRIPT_LIMIT + 1)
    if data is None:
        return None, f"transcript not available ({folder.name}/{name} not found, or not a " \
                     "regular file)"
    note = None
    if len(data) > TRANSCRIPT_LIMIT:
        data = data[:TRANSCRIPT_LIMIT]
        note = Event("note", "transcript cut", [("note", f"only the first {TRANSCRIPT_LIMIT:,} "
                                                          "bytes of the transcript are shown")])
    events: list[Event] = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            events.append(Event("raw", "unreadable line", [("line", _clip(line))], error=True))
            continue
        events.append(_event(raw) if isinstance(raw, dict) else
                      Event("raw", "unreadable line", [("line", _clip(line))], error=True))
    return events + ([note] if note else []), ""


def _run_views(runs: Sequence[RunResult], results_path: Path | None,
               with_transcripts: bool,
               traces: Mapping[TraceKey, Trace] | None = None) -> list[RunView]:
    """The runs as the page shows them: each with its transcript, or (none here) its trace
    from ``traces`` when one is kept for it."""
    views = []
    for r in sorted(runs, key=lambda r: (r.replication, r.condition or ""))[-MAX_RUNS:]:
        events, why = read_transcript(r, results_path) if with_transcripts else (None, "")
        view = RunView(r.replication, r.status, r.reason, r.turns, usd(r.cost_usd),
                       r.notes, events, why or None, r.condition, estimated=r.estimated,
                       install_s=r.install_s)
        if events is None and traces is not None:
            trace = traces.get(_trace_key(r))
            if trace is not None:
                view.trace, view.missing = _trace_view(trace), None
            else:
                view.missing = ("no transcript here, and no trace kept for this run (the "
                                "traces keep the newest runs of each task)")
        views.append(view)
    return views


# ---- statistics for the page --------------------------------------------------------------


# ---- inline SVG ---------------------------------------------------------------------------

PR_COLOUR, BASE_COLOUR, BAD_COLOUR = "#1a63c7", "#8a8f98", "#c62828"


def _t(x: float) -> str:
    return f"{x:.1f}"


def _svg(width: int, height: int, label: str, parts: Sequence[str]) -> Markup:
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}">'
                  f"<title>{escape(label)}</title>" + "".join(parts) + "</svg>")


def _legend(x: float, y: float, with_baseline: bool) -> list[str]:
    out = [f'<circle cx="{_t(x)}" cy="{_t(y - 4)}" r="4" fill="{PR_COLOUR}"/>',
           f'<text x="{_t(x + 8)}" y="{_t(y)}" class="lg">this run</text>']
    if with_baseline:
        out += [f'<rect x="{_t(x + 70)}" y="{_t(y - 8)}" width="8" height="8" '
                f'fill="{BASE_COLOUR}"/>', f'<text x="{_t(x + 82)}" y="{_t(y)}" '
                'class="lg">baseline</text>']
    return out


def pass_rate_plot(rows: Sequence[dict[str, Any]], iv: Intervals) -> Markup:
    """Per task: this run's pass rate (and the baseline's) with compare's intervals (Wilson;
    the baseline's given the plan when the PR's runs were planned from it)."""
    level, with_baseline = iv.level, iv.baseline is not None
    rows = list(rows)[:MAX_PLOT_TASKS]
    left, right, top, step, width = 230, 20, 34, 22, 760
    plot_w = width - left - right
    height = top + step * len(rows) + 26

    def x(v: float) -> float:
        return left + v * plot_w

    parts = _legend(left, 14, with_baseline)
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line x1="{_t(x(tick))}" y1="{top - 6}" x2="{_t(x(tick))}" '
                     f'y2="{height - 22}" class="grid"/>')
        parts.append(f'<text x="{_t(x(tick))}" y="{height - 8}" class="tick" '
                     f'text-anchor="middle">{tick * 100:.0f} %</text>')
    for i, row in enumerate(rows):
        y = top + step * i + step / 2
        name = row["task"] if len(row["task"]) <= 34 else row["task"][:33] + "…"
        cls = "bad" if row["group"] == "regressed" else "lbl"
        parts.append(f'<text x="{left - 8}" y="{_t(y + 4)}" text-anchor="end" '
                     f'class="{cls}">{escape(name)}<title>{escape(row["task"])}</title></text>')
        arms = [("candidate", PR_COLOUR, y + (3 if with_baseline else 0))]
        if with_baseline:
            arms.insert(0, ("baseline", BASE_COLOUR, y - 3))
        for arm, colour, yy in arms:
            task = iv.per_task[row["task"]][arm]
            passed, n = task.passed, task.runs
            if task.interval is None:
                continue
            lo, hi = task.interval
            parts.append(f'<line x1="{_t(x(lo))}" y1="{_t(yy)}" x2="{_t(x(hi))}" '
                         f'y2="{_t(yy)}" stroke="{colour}" stroke-width="2"/>')
            cx = x(passed / n)
            label = f"{arm}: {passed}/{n} passed, {level * 100:g} % interval " \
                    f"{lo * 100:.0f}–{hi * 100:.0f} %" + (" given the plan" if task.given_plan
                                                          else "")
            shape = (f'<rect x="{_t(cx - 4)}" y="{_t(yy - 4)}" width="8" height="8" '
                     f'fill="{colour}">' if arm == "baseline" else
                     f'<circle cx="{_t(cx)}" cy="{_t(yy)}" r="4" fill="{colour}">')
            end = "</rect>" if arm == "baseline" else "</circle>"
            parts.append(f"{shape}<title>{escape(label)}</title>{end}")
    return _svg(width, height, f"Pass rate per task with {level * 100:g} % intervals", parts)


def histogram(title: str, unit: Callable[[float], str], candidate: Sequence[float],
              baseline: Sequence[float] | None) -> Markup | None:
    """A distribution of per-run values: this run's bars beside the baseline's, shared bins,
    each arm as a share of its runs (the arms may have different numbers of runs)."""
    values = list(candidate) + list(baseline or [])
    if not values:
        return None
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1
    bins = min(20, max(5, len(set(values))))
    edges = np.linspace(lo, hi, bins + 1)
    arms = [("this run", PR_COLOUR, candidate)]
    if baseline is not None:
        arms.insert(0, ("baseline", BASE_COLOUR, baseline))
    shares = [np.histogram(v, bins=edges)[0] / max(1, len(v)) for _, _, v in arms]
    top_share = max(float(s.max()) for s in shares) or 1.0
    left, top, width, height = 50, 28, 360, 200
    plot_w, plot_h = width - left - 12, height - top - 34
    parts = _legend(left, 14, baseline is not None)
    bw = plot_w / bins
    for a, ((name, colour, vals), share) in enumerate(zip(arms, shares, strict=True)):
        sub = bw / len(arms)
        for i, s in enumerate(share):
            if s <= 0:
                continue
            h = s / top_share * plot_h
            bx = left + i * bw + a * sub
            tip = (f"{name}: {s * 100:.0f} % of {len(vals)} runs in "
                   f"{unit(edges[i])} – {unit(edges[i + 1])}")
            parts.append(f'<rect x="{_t(bx + 0.5)}" y="{_t(top + plot_h - h)}" '
                         f'width="{_t(max(sub - 1, 1))}" height="{_t(h)}" fill="{colour}">'
                         f"<title>{escape(tip)}</title></rect>")
    base_y = top + plot_h
    parts.append(f'<line x1="{left}" y1="{_t(base_y)}" x2="{left + plot_w}" y2="{_t(base_y)}" '
                 'class="axis"/>')
    for v, anchor in ((lo, "start"), ((lo + hi) / 2, "middle"), (hi, "end")):
        xx = left + (v - lo) / (hi - lo) * plot_w
        parts.append(f'<text x="{_t(xx)}" y="{_t(base_y + 16)}" class="tick" '
                     f'text-anchor="{anchor}">{escape(unit(v))}</text>')
    parts.append(f'<text x="{left - 6}" y="{_t(top + 8)}" class="tick" text-anchor="end">'
                 f"{top_share * 100:.0f} %</text>")
    parts.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 2}" class="tick" '
                 f'text-anchor="middle">{escape(title)} per run</text>')
    return _svg(width, height, f"{title} per run: distribution", parts)


# ---- the page -----------------------------------------------------------------------------

_CHANGE_LABEL = {"newly_failing": "newly failing", "worse": "worse",
                 "newly_passing": "newly passing", "better": "better", "same": "unchanged"}
_STATUS_LABEL = {"unmeasured": "no valid run in one arm", "changed": "task changed: not compared",
                 "added": "added: not gated", "removed": "removed", "compared": "compared",
                 "broken": "broken: not run, not compared"}
_GROUP = {"newly_failing": "regressed", "worse": "regressed", "newly_passing": "improved",
          "better": "improved", "same": "same"}


def _json_for_script(data: object) -> Markup:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or
    ``&`` at all (they are ``\\u003c`` ...), so nothing in it can close the element or open
    a comment, and U+2028/2029 escaped for good measure."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return Markup(text)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


@cache
def _assets() -> tuple[str, str]:
    folder = resources.files("gate") / "templates"
    return ((folder / "report.js").read_text(encoding="utf-8"),
            (folder / "report.css").read_text(encoding="utf-8"))


@cache
def _env() -> Environment:
    env = Environment(loader=PackageLoader("gate", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      auto_reload=False)
    env.filters.update(FILTERS)  # the one number formatter (gate/report/_format.py)
    return env


def preload() -> None:
    """Read the template, script and style now (see ``_render.preload_templates``), and load
    what numpy loads on first use for the page's intervals and histograms (``np.percentile``
    and ``np.histogram`` import ``numpy.ma``): nothing is imported after the suite."""
    import numpy.ma  # noqa: F401

    _assets()
    _env().get_template("report.html.j2")


def content_security_policy(script: str, style: str) -> str:
    """Only the page's own script and style run (by hash); nothing loads from anywhere."""
    return (f"default-src 'none'; script-src '{_sha256(script)}'; "
            f"style-src '{_sha256(style)}'; img-src data:; base-uri 'none'; form-action 'none'")


def banner(headline: str, verdict: str, reasons: Sequence[str]) -> list[str]:
    """The banner's lines under its title, each said once: compare's headline without the
    verdict (the title says it), cut at its reasons, each reason a line of its own (the
    headline of a regression is its reasons joined), then any reason it does not say."""
    body = headline.removeprefix(f"{verdict}: ")
    lines: list[str] = []
    at = 0
    for start, reason in sorted((body.find(r), r) for r in dict.fromkeys(reasons) if r in body):
        if start >= at:
            lines += [*_parts(body[at:start]), reason]
            at = start + len(reason)
    lines += _parts(body[at:])
    return lines + [r for r in reasons if r not in lines and r not in body] or [headline]


def _parts(text: str) -> list[str]:
    """The clauses of a headline's text between its reasons (``; `` joins them)."""
    return [p.strip(" ;") for p in text.split("; ") if p.strip(" ;,")]


def _notes(comparison: Comparison | None, shown: Sequence[str | None]) -> list[str]:
    """The verdict policy's notes (drift guard, sequential looks, the α split, an uncommitted
    baseline, ...) as ``gate compare`` and the PR comment say them: each once, none the
    banner already says."""
    notes = dict.fromkeys(comparison.notes if comparison is not None else [])
    return [n for n in notes if n not in shown]


def _verdict_class(m: MetricResult, c: Comparison) -> str:
    """The row's colour: a metric that could not have blocked (blind, not gating, not
    comparable) is never the green "ok"."""
    if m.blocks:
        return "bad"
    blind = c.resolution is not None and m.name in c.resolution.blind
    if (m.verdict in ("regression", "unjudged", "unclear") or not m.comparable or blind
            or not m.gating):
        return "warn"
    return "ok"

def _metric_rows(comparison: Comparison | None, iv: Intervals) -> list[dict[str, str]]:
    rows = []
    c, b = iv.candidate, iv.baseline
    for metric in METRICS:
        name = metric.name
        row = {"label": metric.title, "candidate": metric_value(name, c.values[name]),
               "candidate_iv": interval(name, c.intervals[name]),
               "baseline": "", "baseline_iv": "", "change": "", "change_iv": "",
               "verdict": "", "verdict_class": ""}
        if comparison is not None and b is not None:
            m: MetricResult = comparison.metric(name)
            row.update(baseline=metric_value(name, m.baseline),
                       candidate=metric_value(name, m.candidate),
                       baseline_iv=interval(name, b.intervals[name]),
                       change=metric_change(m).replace("<sub>", "_").replace("</sub>", ""),
                       verdict=metric_verdict(m, comparison.resolution, icon=False),
                       verdict_class=_verdict_class(m, comparison))
        rows.append(row)
    return rows


def _task_rows(results: Results, baseline: Results | None,
               comparison: Comparison | None) -> list[dict[str, Any]]:
    c_runs = runs_by_task(results.runs)
    b_runs = runs_by_task(baseline.runs) if baseline is not None else {}
    changes: dict[str, TaskChange] = {t.task: t for t in comparison.tasks} if comparison else {}
    ids = sorted(set(results.suite.tasks) | (set(baseline.suite.tasks) if baseline else set())
                 | set(changes))  # a broken task: in neither file's suite, never dropped
    rows: list[dict[str, Any]] = []
    for tid in ids:
        cv, bv = valid_runs(c_runs.get(tid, [])), valid_runs(b_runs.get(tid, []))
        ch = changes.get(tid)
        if ch is None:
            label, group, p = ("no valid run" if not cv else "—"), "same", None
        elif ch.status != "compared":
            label, group, p = _STATUS_LABEL[ch.status], ch.status, None
        else:
            label = _CHANGE_LABEL[ch.change or "same"]
            group, p = _GROUP[ch.change or "same"], ch.p_value
        if ch is not None and ch.flaky and group == "same":
            label = "flaky"
        failing = [r for r in c_runs.get(tid, []) if r.status != "passed"]
        reasons = list(dict.fromkeys((r.reason or r.status) for r in failing))[:5]
        if ch is not None and ch.status == "broken":
            reasons = ch.reasons  # why it could not load: it has no runs
        row: dict[str, Any] = {
            "task": tid, "label": label, "group": group,
            "flaky": bool(ch.flaky) if ch else False,
            "candidate_passed": sum(r.status == "passed" for r in cv), "candidate_runs": len(cv),
            "candidate_errors": len(c_runs.get(tid, [])) - len(cv),
            "baseline_passed": sum(r.status == "passed" for r in bv), "baseline_runs": len(bv),
            "baseline_errors": len(b_runs.get(tid, [])) - len(bv),
            "p": p if p is not None and math.isfinite(p) else None,
            "turns": (sum(r.turns for r in cv) / len(cv)) if cv else None,
            "cost": (sum(r.cost_usd for r in cv) / len(cv)) if cv else None,
            "reasons": [r[:300] for r in reasons],
        }
        rows.append(row)
    order = {"regressed": 0, "broken": 1, "unmeasured": 1, "changed": 2, "added": 3, "removed": 4,
             "improved": 5, "same": 6}
    rows.sort(key=lambda r: (order.get(r["group"], 9), r["p"] if r["p"] is not None else 1.0,
                             r["task"]))
    return rows


def _rate(passed: int, runs: int, errors: int) -> str:
    if not runs and not errors:
        return "—"
    return f"{passed}/{runs}" + (f" (+{errors} err)" if errors else "")


def render_html(results: Results, *, results_path: Path | None = None,
                baseline: Results | None = None, baseline_path: Path | None = None,
                comparison: Comparison | None = None, level: float = 0.95,
                seed: int = 0, run_url: str | None = None,
                effects: EffectReport | None = None,
                baseline_traces: Sequence[Trace] | None = None) -> str:
    """The report page. ``comparison`` is the verdict (``compare.judge``'s, as ``gate
    compare`` reaches it: the page never judges) when a baseline is given; transcripts are
    read beside ``results_path`` (and ``baseline_path``, when that is a run's own results
    file with its transcripts). ``baseline_traces``: the traces kept next to the baseline
    (``baseline.traces.jsonl``), shown for each baseline run that has no transcript here.
    ``effects``: the skill conditions' table and effects (``gate.compare._effects.effects``),
    for a run of several conditions."""
    script, style = _assets()
    c_by = runs_by_task(results.runs)
    b_by = runs_by_task(baseline.runs) if baseline is not None else {}
    judged = comparison is not None  # beside a verdict: the runs it judged, the plain ones
    shown = plain_runs(results) if judged else results
    b_shown = plain_runs(baseline) if judged and baseline is not None else baseline
    compared = [t.task for t in comparison.tasks if t.status == "compared"] if comparison else None
    iv = intervals(shown, b_shown, compared, level=level, seed=seed,
                   given=comparison.plan.given() if comparison and comparison.plan else None)
    rows = _task_rows(shown, b_shown, comparison)
    b_traces = _trace_index(baseline_traces) if baseline_traces is not None else None
    sections = []
    for i, row in enumerate(rows):
        tid = row["task"]
        sections.append({
            "anchor": f"task-{i}", "row": row,
            "candidate": _run_views(c_by.get(tid, []), results_path, True),
            "baseline": (_run_views(b_by.get(tid, []), baseline_path, True, b_traces)
                         if baseline is not None else None)})
        row["anchor"] = f"task-{i}"
        row["candidate_cell"] = _rate(row["candidate_passed"], row["candidate_runs"],
                                      row["candidate_errors"])
        row["baseline_cell"] = _rate(row["baseline_passed"], row["baseline_runs"],
                                     row["baseline_errors"])
    c_valid = valid_runs(results.runs)
    b_valid = valid_runs(baseline.runs) if baseline is not None else None
    plots = [p for p in (
        histogram("Turns", lambda v: f"{v:.0f}", [r.turns for r in c_valid],
                  [r.turns for r in b_valid] if b_valid is not None else None),
        histogram("Cost", usd, [r.cost_usd for r in c_valid],
                  [r.cost_usd for r in b_valid] if b_valid is not None else None),
    ) if p is not None]
    data = {"tasks": [{k: row[k] for k in ("task", "label", "group", "flaky", "p", "turns",
                                             "cost", "reasons", "anchor")}
                      | {"candidate_rate": (row["candidate_passed"] / row["candidate_runs"]
                                            if row["candidate_runs"] else None),
                         "baseline_rate": (row["baseline_passed"] / row["baseline_runs"]
                                           if row["baseline_runs"] else None)}
                      for row in rows]}
    summary = results.summary
    if comparison is not None:
        word = verdict_words(comparison)[1]
        verdict = word[:1].upper() + word[1:]
        headline, *reasons = banner(comparison.headline, verdict, comparison.reasons)
    else:
        reasons = []
        verdict = "Results alone (no baseline, no verdict)"
        headline = (f"{summary.passed}/{summary.total} valid runs passed"
                    + (f" ({pct(summary.pass_rate)})" if summary.pass_rate is not None else "")
                    + f", {summary.errors} infra error{'s' if summary.errors != 1 else ''}, "
                    f"{len(results.suite.tasks)} tasks.")
    arms = [("this run", results)] + ([("baseline", baseline)] if baseline is not None else [])
    interrupted = [n for _, a in arms if (n := a.interruption_note())]
    net_raw = net_raw_note(*(a for _, a in arms))
    return _env().get_template("report.html.j2").render(
        csp=content_security_policy(script, style), script=Markup(script), style=Markup(style),
        verdict=verdict, verdict_class=(
            "alone" if comparison is None else "inconclusive"
            if comparison.unjudged is not None and comparison.verdict == "pass"
            else comparison.verdict),
        headline=headline, reasons=reasons,
        power=comparison.power.statement if comparison and comparison.power else None,
        interrupted=interrupted, net_raw=net_raw,
        notes=_notes(comparison, [headline, *reasons, *interrupted, net_raw]),
        metrics=_metric_rows(comparison, iv),
        bootstrapped=said([m for m in METRICS if m.kind != "pass"]),
        level=f"{level * 100:g} %", with_baseline=baseline is not None,
        stat_tasks=len(iv.tasks),
        rows=rows, sections=sections,
        pass_plot=pass_rate_plot(rows, iv),
        plots=plots,
        arms=[{"name": n, "model": a.model, "commit": (a.commit or "unknown")[:12],
               "created_at": a.created_at, "kind": a.agent.kind,
               "fingerprint": a.agent.fingerprint[:24], "runs": len(a.runs),
               "gate_version": a.gate_version} for n, a in arms],
        agent_changes=comparison.agent_changes if comparison else [],
        run_url=run_url if run_url and run_url.startswith(("https://", "http://")) else None,
        data_json=_json_for_script(data),
        conditions=_condition_view(effects) if effects is not None else None,
        health=[h.line for h in comparison.health] if comparison else [],
        health_lead=HEALTH_LEAD,
        plan=_plan_view(comparison),
    )


def _plan_view(c: Comparison | None) -> dict[str, Any] | None:
    """How the plan spread the runs: its lines and a row a task (the template escapes)."""
    if c is None or c.plan is None:
        return None
    return {"summary": plan_summary(c.plan), "lines": plan_lines(c),
            "rows": [{"task": r.task, "looks": "+".join(map(str, r.looks)), "basis": r.basis}
                     for r in c.plan.tasks]}


def _condition_view(report: EffectReport) -> dict[str, Any]:
    """The per-condition table and each effect, as text cells (the template escapes them)."""
    from gate.report._effects import (
        CONDITION_HEADERS,
        METRIC_HEADERS,
        SCOPE,
        _block,
        _headline,
        condition_rows,
        metric_rows,
    )

    return {"headers": CONDITION_HEADERS, "rows": condition_rows(report.conditions, str),
            "scope": SCOPE, "notes": report.notes, "reference": report.reference,
            "metric_headers": METRIC_HEADERS,
            "effects": [{"headline": _headline(e, str), "verdict": e.verdict,
                         "metrics": metric_rows(e), "block": _block(e, str)}
                        for e in report.effects]}
