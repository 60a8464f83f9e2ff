"""Progress of a suite run, on stderr.

- On a terminal (and not in CI): a live ``rich`` display — done/total, pass/fail/error so far,
  tokens, dollars, ETA — redrawn in place.
- In CI logs (no TTY, or ``CI`` set): plain lines, at most one per ``interval`` seconds or per
  10 % of the runs, plus a line for each failed or errored run; under GitHub Actions the
  per-run lines are folded into log groups (``::group::`` / ``::endgroup::``) between the
  progress lines, so the log reads as a few lines with the details one click away.

Either way a summary table closes the run. ``rich`` is imported only when a run starts: a
config error or ``--help`` never pays for it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import defaultdict
from typing import IO, TYPE_CHECKING, Any

from gate._files import printable
from gate.github import in_actions
from gate.report import count, dollars, rate

if TYPE_CHECKING:
    from gate.core.results import Results, RunResult

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERR "}
#: tasks listed one per row in the summary table; above it, only those with a failure
TABLE_TASKS = 40


def run_line(r: RunResult) -> str:
    """One landed run, as one line: a reason quoting a task's output is escaped, so it can
    neither start a line of its own (a forged ``::endgroup::`` or workflow command) nor
    move the terminal's cursor."""
    tail = f"  {printable(r.reason)}" if r.reason else ""
    # a same-job A/B's arm, a skill condition
    arm = "".join(f" [{printable(x)}]" for x in (r.arm, r.condition) if x)
    return (f"{MARKS[r.status]} {r.task} #{r.replication}{arm} ({count(r.turns, 'turn')}, "
            f"{dollars(r.cost_usd)}, {r.duration_s or 0:.1f}s){tail}")


def is_ci(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _tokens(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def _duration(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    """``on_start`` / ``on_result`` for ``run_suite``, then ``finish()`` for the table.

    ``live``: None decides from the stream (a terminal, outside CI). ``github``: None decides
    from ``GITHUB_ACTIONS``. Thread-safe: runs land from worker threads.
    """

    def __init__(self, stream: IO[str] | None = None, *, live: bool | None = None,
                 github: bool | None = None, interval: float = 30.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if live is None:
            isatty = getattr(self.stream, "isatty", lambda: False)()
            live = bool(isatty) and not is_ci() and os.environ.get("TERM") != "dumb"
        self.live = live
        self.github = in_actions() if github is None else github
        self.interval = interval
        self.total: int | None = None
        self.done = 0
        self.counts: dict[str, int] = defaultdict(int)
        self.tokens = 0
        self.cost = 0.0
        self.started = time.monotonic()
        self.runs: list[RunResult] = []
        self._lock = threading.RLock()  # finish() runs inside on_result for the last run
        self._last_line = self.started
        self._last_step = 0  # the 10 % step of the last progress line
        self._group_open = False
        self._kept = 0  # runs kept from a journal (--resume): not this process's pace
        self._last_printed_done = -1
        self._finished = False
        self._live: Any = None  # rich.progress.Progress
        self._task: Any = None

    # ----- run_suite's callbacks ----------------------------------------------------------

    def on_start(self, results: Results, todo: int) -> None:
        with self._lock:
            kept = list(results.runs)
            self.total = todo + len(kept)
            self._kept = len(kept)
            for r in kept:
                self._count(r)
            if self.live:
                self._start_live()
            else:
                self._print(f"agent-gate: {self.total} runs"
                            + (f" ({len(kept)} kept, {todo} to run)" if kept else ""))

    def on_result(self, r: RunResult) -> None:
        with self._lock:
            self._count(r)
            if self.live:
                self._update_live()
                if r.status != "passed":
                    self._live.console.print(run_line(r), markup=False, highlight=False)
                if self.total is not None and self.done >= self.total:
                    self.finish()
                return
            if self.github:
                if not self._group_open:
                    self._print(f"::group::agent-gate: runs from #{self.done}")
                    self._group_open = True
                self._print(run_line(r))
            elif r.status != "passed":
                self._print(run_line(r))
            if self._line_due():
                self._close_group()
                self._print(self.status_line())
            if self.total is not None and self.done >= self.total:
                self.finish()  # the table right after the suite (gate ci judges after it)

    def __call__(self, r: RunResult) -> None:  # usable where a plain on_result is expected
        self.on_result(r)

    def stop(self) -> None:
        """Stop the live display, close an open log group (also when the run failed)."""
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
            self._close_group()

    def finish(self, results: Results | None = None) -> None:
        """The last progress line and the summary table (of ``results``' runs when given:
        those include runs kept from a journal); once."""
        self.stop()
        with self._lock:
            if self._finished or (self.done == 0 and results is None):
                return
            self._finished = True
            if not self.live and self._last_printed_done != self.done:
                self._print(self.status_line())
            self._table(list(results.runs) if results is not None else self.runs)

    # ----- the numbers ---------------------------------------------------------------------

    def _count(self, r: RunResult) -> None:
        self.done += 1
        self.counts[r.status] += 1
        self.tokens += r.usage.prompt_tokens + r.usage.output_tokens
        self.cost += r.cost_usd + (r.overhead_usd or 0.0)
        self.runs.append(r)

    def eta(self) -> float | None:
        """Seconds left, from this process's pace (runs kept from a journal not counted)."""
        if not self.total or self.done >= self.total:
            return None if not self.total else 0.0
        ran = self.done - self._kept
        elapsed = time.monotonic() - self.started
        if ran <= 0 or elapsed <= 0:
            return None
        return elapsed / ran * (self.total - self.done)

    def status_line(self) -> str:
        c = self.counts
        total = f"/{self.total}" if self.total else ""
        pct = f" ({rate(self.done / self.total)})" if self.total else ""
        eta = self.eta()
        self._last_printed_done = self.done
        return (f"agent-gate: {self.done}{total} runs{pct}: {c['passed']} passed, "
                f"{c['failed']} failed, {c['error']} errors · {_tokens(self.tokens)} tokens · "
                f"{dollars(self.cost)} · elapsed {_duration(time.monotonic() - self.started)}"
                + (f" · ETA {_duration(eta)}" if eta is not None and eta > 0 else ""))

    def _line_due(self) -> bool:
        now = time.monotonic()
        step = int(self.done * 10 / self.total) if self.total else 0
        due = (step > self._last_step) or (now - self._last_line >= self.interval) or \
            (self.total is not None and self.done >= self.total)
        if due:
            self._last_step, self._last_line = step, now
        return due

    # ----- output --------------------------------------------------------------------------

    def _print(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()

    def _close_group(self) -> None:
        if self._group_open:
            self._print("::endgroup::")
            self._group_open = False

    def _console(self) -> Any:
        from rich.console import Console

        # a log has no width: the table is as wide as its cells need, never cut at 80
        return Console(file=self.stream, force_terminal=self.live or None,
                       width=None if self.live else 200, highlight=False, soft_wrap=False)

    def _start_live(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._live = RichProgress(
            TextColumn("[bold]agent-gate"), BarColumn(), MofNCompleteColumn(),
            TextColumn("[green]{task.fields[passed]} pass[/] [red]{task.fields[failed]} fail[/]"
                       " [yellow]{task.fields[errors]} err[/]"),
            TextColumn("{task.fields[tokens]} tok · ${task.fields[cost]}"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self._console(), transient=False, refresh_per_second=4)
        self._task = self._live.add_task("runs", total=self.total, completed=self.done,
                                         **self._fields())
        self._live.start()

    def _fields(self) -> dict[str, object]:
        return {"passed": self.counts["passed"], "failed": self.counts["failed"],
                "errors": self.counts["error"], "tokens": _tokens(self.tokens),
                "cost": f"{self.cost:.4f}"}

    def _update_live(self) -> None:
        self._live.update(self._task, completed=self.done, **self._fields())

    def _table(self, runs: list[RunResult]) -> None:
        from rich.table import Table
        from rich.text import Text  # a task id is text, never markup

        from gate.core.results import runs_by_task

        per = runs_by_task(runs)
        shown = sorted(per)
        hidden = 0
        if len(shown) > TABLE_TASKS:
            bad = [t for t in shown if any(r.status != "passed" for r in per[t])]
            hidden, shown = len(shown) - len(bad), bad
        table = Table(title="agent-gate: summary", title_justify="left")
        for name, justify in (("task", "left"), ("runs", "right"), ("passed", "right"),
                              ("failed", "right"), ("errors", "right"),
                              ("mean turns", "right"), ("tokens", "right"), ("spend $", "right")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]

        def row(name: str, rs: list[RunResult]) -> list[Any]:
            n = {s: sum(1 for r in rs if r.status == s) for s in MARKS}
            turns = sum(r.turns for r in rs) / len(rs) if rs else 0.0
            tokens = sum(r.usage.prompt_tokens + r.usage.output_tokens for r in rs)
            cost = sum(r.cost_usd + (r.overhead_usd or 0.0) for r in rs)
            return [Text(name), str(len(rs)), str(n["passed"]), str(n["failed"]), str(n["error"]),
                    f"{turns:.1f}", _tokens(tokens), f"{cost:.4f}"]

        for t in shown:
            table.add_row(*row(t, per[t]))
        if hidden:
            table.add_row(f"… {hidden} more, every run passed", "", "", "", "", "", "", "")
        table.add_section()
        table.add_row(*row("all", runs))
        self._console().print(table)
