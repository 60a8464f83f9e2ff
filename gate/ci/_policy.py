"""The gate's policy over a run and its verdict, in one place: what exits with which code,
what a budget stop means, how many infra errors a run or a refresh tolerates, and when an
accept label or ``fail-on-regression = false`` turns a regression into a pass.

The accept label counts only when the user who set it last (the forge says who, and with what
role) may write to the repository: a label anyone could add (a bot, a triager) turns nothing
green. An ignored label gets a visible note; the note of an accepted one records who accepted.

The numbers come from ``gate.compare`` (the verdict, the infra rate and its limit, the exit
code); this module only decides what the job does with them. ``gate ci``, ``gate run`` (with
``--base-ref`` or ``--ab`` too) and ``gate compare --base-ref`` read the same rules from here:
``check_budget`` is the one "stopped by the budget → exit 3", ``check_infra`` the one "too
many infra errors → exit 3" of a run that has no second arm (tests/test_one_rule.py).

Infra errors: the rule is compare's (docs/statistics.md, ``gate.compare.over_infra_limit``): a
judged run is inconclusive (exit 3) when infra errors exceed ``max_infra_rate`` of either arm,
or the candidate's infra rate is significantly higher (one-sided Fisher, p ≤ ``infra_alpha``).
``gate run`` and a refresh have no arm to compare with, so they apply the per-arm half, with
compare's definition of the rate (errors over all of the arm's runs). A refresh also pools
nothing from a run that measured nothing (every run an infra error, or none).
"""

from __future__ import annotations

from dataclasses import dataclass

from gate._files import printable
from gate.ci._forge import Forge
from gate.compare import Comparison, infra_count
from gate.core.results import Results
from gate.errors import GateError, Unmeasurable
from gate.execution.run import spend
from gate.report import code_span, md, render_note

#: exit codes (README): the job's outcome, whoever computed it
PASS, REGRESSION, BAD_INPUT, UNMEASURABLE = 0, 1, 2, 3


def spent(results: Results) -> float:
    """What a run's runs were billed, suite overhead included (what a budget counts)."""
    return sum(spend(r) for r in results.runs)


#: what a suite's run that the budget stopped tells the reader (``gate ci``)
BUDGET_THEN = ("a partial run is not judged and refreshes nothing; raise max-cost, or run "
               "fewer replications or tasks")


def check_budget(results: Results, what: str = "the suite's run",
                 then: str = BUDGET_THEN) -> None:
    """A run the budget stopped is a partial sample: not judged, never pooled (exit 3).
    ``what`` names the run, ``then`` says what follows for whoever ran it."""
    stop = results.interrupted
    if stop is not None and stop.reason.startswith("budget"):
        n = len(stop.missing)
        raise Unmeasurable(f"{what} was stopped by the budget with {n} planned "
                           f"run{'' if n == 1 else 's'} not started ({printable(stop.reason)}): "
                           f"{then}")


def budget_note(results: Results) -> str | None:
    """The comment's line on the job's budget, when it had one."""
    budget = (results.model_extra or {}).get("budget")
    if not isinstance(budget, dict) or budget.get("max_cost_usd") is None:
        return None
    forecast = budget.get("forecast_usd")
    return render_note("budget", limit=f"{budget['max_cost_usd']:.4f}",
                       spent=f"{spent(results):.4f}",
                       forecast=f"{forecast:.4f}" if forecast is not None else "",
                       basis=budget.get("forecast_basis") or "")


def check_infra(results: Results, max_rate: float, *, refresh: bool = False) -> None:
    """Too many infra errors make a run with no second arm unmeasurable (exit 3), never a
    quiet pass: compare's per-arm limit over compare's rate. A refresh (``refresh``) also
    refuses a run that measured nothing, and says the baseline was not refreshed."""
    count = infra_count(results)
    if refresh and count.errors == count.runs:
        raise Unmeasurable("every run of this refresh was an infra error: the baseline was "
                           "not refreshed")
    if not count.over(max_rate):
        return
    if refresh:
        raise Unmeasurable(f"{count.rate:.0%} of this refresh's runs were infra errors (limit "
                           f"{max_rate:.0%}): the baseline was not refreshed")
    first = next((r.reason for r in results.runs if r.status == "error"), None)
    raise Unmeasurable(f"{count.errors} of {count.runs} runs were infra errors (more than "
                       f"{max_rate:.0%}); first: {first}")


@dataclass(frozen=True)
class Outcome:
    """What the job does with a verdict: its exit code and the comment's policy note."""

    exit_code: int
    accepted: bool
    note: str | None  # rendered: "not failing", "how to accept" (None: nothing to say)


def outcome(comparison: Comparison, *, accepted: bool, fail_on_regression: bool,
            accept_label: str, on_pr: bool, label_code: object = None) -> Outcome:
    """The exit code of a judged run: compare's, unless an accepted regression (0) or one
    that is not to fail the job (0, said in a note); a PR's regression says how to accept."""
    code = int(comparison.exit_code)
    if comparison.verdict != "regression":
        return Outcome(code, False, None)
    if accepted:
        return Outcome(PASS, True, None)
    if not fail_on_regression:
        return Outcome(PASS, False, render_note("not_failing"))
    if accept_label and on_pr:
        return Outcome(code, False, render_note("how_to_accept", label=label_code))
    return Outcome(code, False, None)


@dataclass(frozen=True)
class Acceptance:
    """What the accept label amounts to on this change request."""

    who: str | None = None  # who accepted; None: not accepted
    note: str | None = None  # for the report
    warning: str | None = None  # for the job's annotations
    log: str | None = None


def acceptance(forge: Forge, number: int, label: str, labels: list[str]) -> Acceptance:
    """Whether ``label`` (among the change request's ``labels``) accepts a regression, and
    who set it. The caller shows the note, the warning and the log line."""
    if not label or label.casefold() not in {x.casefold() for x in labels}:
        return Acceptance()
    name = code_span(label)
    try:
        setter = forge.label_setter(number, label)
    except GateError as exc:
        return Acceptance(
            note=render_note("label_unchecked", label=name),
            warning=f"the {label} label accepts nothing: cannot tell who added it: {exc}")
    who, role = setter.who, setter.role
    if who is None or not setter.can_write:
        return Acceptance(
            note=render_note("label_ignored", label=name, who=md(who, 60), role=md(role, 40)),
            warning=(f"the {label} label was added by {who or 'an unknown user'} ({role}): "
                     "ignored, accepting needs write permission"))
    return Acceptance(
        who=who, note=render_note("accepted", label=name, who=md(who, 60), role=md(role, 40)),
        log=f"the regression was accepted by {who} ({role})")
