"""The verdict, with the gate's policy on top of the test: one function for every caller.

``gate compare`` and ``gate ci`` both call :func:`judge`, so the same two results files, the
same ``[gate]`` settings and the same history give the same verdict, locally and in CI. Pure:
the history is passed in, never read here.

Policy beyond :func:`compare`:

- **Sequential runs** (``Results.schedule.sequential``): the looks share α, so the runs are
  judged at their look's share of it (:func:`gate.compare.look_share`: α/4, α/4, α/2 for
  three looks; α/2 for a file of two) — whoever judges the file (docs/statistics.md §5).
- **Drift guard**: a pass-rate regression no worse than main's own A/A checks show is
  reported, not blocking, when main is drifting (:mod:`gate.compare._drift`).
- **What the simulator cannot judge**: both arms simulated and a change only a model reads
  (the prompt's words, tools, a skill's text): the pass rate is "not judged", said first
  (:mod:`gate.compare._simjudge`; ``sim_unjudged`` says whether that exits 3 or 0).
- **Another upstream**: a baseline measured on another upstream than the run (the files'
  ``upstream_api``) is named in the verdict; where their prices differ cost is reported, not
  gated; where the model differs too the comparison is inconclusive, naming the fix
  (:mod:`gate.compare._upstreams`).
- **Skill conditions**: runs under a named condition (``gate run --condition``) are never
  pooled with the plain runs: the baseline gate compares the plain runs, and when both files
  hold the ``target`` and ``control`` conditions the skill-effect test
  (:mod:`gate.compare._did`) joins the verdict. The two tests then share α (Bonferroni):
  the pass-rate test runs at α/2 (shared again between sequential looks), the skill-effect test
  at α/2, so the verdict's false-block budget stays α (docs/statistics.md §9).

What the policy did is in ``Comparison.notes``, so every report says it. The verdict's short
why (``Comparison.why``, :mod:`gate.compare._why`) is read off the decided comparison last:
a step that decides something of its own puts its short reason there first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gate.compare import _stats
from gate.compare._compare import compare, unpriced_note
from gate.compare._did import has_skill_effect, skill_effect, skill_effect_reason
from gate.compare._drift import HistoryPoint, apply_drift_guard
from gate.compare._model import Comparison, SkillEffect
from gate.compare._plan import RunPlan, look_share
from gate.compare._plancheck import checked_plan, plan_spread
from gate.compare._simjudge import SIM_UNJUDGED_DEFAULT, SimUnjudged, with_sim_unjudged
from gate.compare._upstreams import with_upstream_check
from gate.compare._why import with_why
from gate.core.config import GateSettings
from gate.core.metrics import PERMUTED_GATING, said
from gate.core.results import Results, summarize


def plain_runs(results: Results) -> Results:
    """The file with only the runs that ran under no named condition (the file itself when
    it has no conditions): what the baseline gate compares. Its plan keeps the plain runs'
    plan and drops the conditions' (``plan.conditions``): it holds none of their runs."""
    if all(r.condition is None for r in results.runs) and (
            results.plan is None or results.plan.conditions is None):
        return results
    runs = [r for r in results.runs if r.condition is None]
    plan = (results.plan.model_copy(update={"conditions": None})
            if results.plan is not None else None)
    return results.model_copy(update={"runs": runs, "summary": summarize(runs), "plan": plan})


def judge(base: Results, pr: Results, settings: GateSettings,
          history: Sequence[HistoryPoint] = (), *,
          sim_unjudged: SimUnjudged = SIM_UNJUDGED_DEFAULT,
          names: tuple[str, str] = ("the baseline", "the results file")) -> Comparison:
    """Compare ``pr`` with ``base`` under ``settings`` and apply the gate's verdict policy.
    ``sim_unjudged`` (``[ci] sim_unjudged``): what a pass rate the simulator cannot judge
    does to the verdict (gate/compare/_simjudge.py). A planned file's plan is checked first
    (gate/compare/_plancheck.py: ``BadInput`` naming the file by ``names`` and the field)."""
    plan = checked_plan(base, pr, names=names)
    # the tests condition on the RECOMPUTED plan (source "baseline"), never on the record
    allowed = plan.allowed() if plan is not None else None
    looks = pr.schedule.sequential if pr.schedule is not None else None
    notes: list[str] = []
    # decided by what the files hold, never by their outcomes: a fixed split of α
    shared = has_skill_effect(base) and has_skill_effect(pr)
    family = settings.model_copy(update={"alpha": settings.alpha / 2}) if shared else settings
    b_plain, p_plain = plain_runs(base), plain_runs(pr)
    share = file_share(pr, plan)
    if share < 1:
        # every test the looks repeat shares its level between them: pass rate and the metrics
        level = family.model_copy(update={"alpha": family.alpha * share,
                                          "metric_alpha": family.metric_alpha * share})
        comparison = compare(b_plain, p_plain, level, allowed=allowed)
        notes.append(sequential_note(comparison, looks or [], family, plan=plan,
                                     looks_run=pr.plan.looks_run if pr.plan else None))
    else:
        comparison = compare(b_plain, p_plain, family, allowed=allowed)
    comparison, drift = apply_drift_guard(comparison, history,
                                          fingerprint=pr.agent.fingerprint,
                                          alpha=settings.alpha)
    if drift:
        notes.append(drift)
    effect = skill_effect(base, pr, alpha=settings.alpha / 2 if shared else settings.alpha,
                          ci_level=settings.ci_level)
    if shared:
        notes.append(alpha_note(settings, share=share))
    if (dirty := uncommitted_note(base)) is not None:
        notes.append(dirty)
    if notes:
        comparison = comparison.model_copy(update={"notes": [*comparison.notes, *notes]})
    interrupted = base.interrupted is not None or pr.interrupted is not None
    judged = (with_skill_effect(comparison, effect, interrupted=interrupted, expected=shared)
              if effect is not None else comparison)
    judged = with_upstream_check(with_yardstick_check(judged, base, pr), base, pr)
    judged = with_sim_unjudged(judged, base, pr, sim_unjudged)
    if plan is not None and pr.plan is not None:
        spread = plan_spread(plan, pr.plan.looks_run, conditioned=bool(allowed),
                             conditions=pr.plan.conditions)
        judged = judged.model_copy(update={"plan": spread})
    return with_why(with_unpriced(judged, pr))


def with_unpriced(c: Comparison, pr: Results) -> Comparison:
    """The headline, whatever the verdict, names the models the PR's agent asked for that
    have no price (the runs that did are failed) and where their price goes."""
    note = unpriced_note(pr)
    return c if note is None else c.model_copy(update={"headline": f"{c.headline}; {note}"})


def yardstick_problem(base: Results, pr: Results) -> str | None:
    """Why ``base`` cannot judge ``pr`` at all, or None: a simulated yardstick never judges a
    real run (nor a real one a simulated run). Their pass rates, turns and costs are those of
    different producers; any difference is the simulator's, not the agent's."""
    if base.simulated == pr.simulated:
        return None
    if base.simulated:
        return (f"the baseline was measured on the simulator ({base.model}) and this run "
                f"through the API ({pr.model}): a simulated yardstick never judges a real run. "
                "Make the baseline from a real run (`gate run` with the model API's key, then "
                "`gate baseline results.json`), or judge a `gate run --sim` run against it")
    return (f"this run is the simulator's ({pr.model}) and the baseline was measured through "
            f"the API ({base.model}): a simulated run is never judged against a real "
            "baseline. Run without --sim (with the model API's key), or compare with a baseline "
            "made on the simulator")


def with_yardstick_check(c: Comparison, base: Results, pr: Results) -> Comparison:
    """``c``, inconclusive (exit 3) when the yardstick cannot judge the run at all: what was
    measured is still shown, and what a regression would have been is kept as "would block"."""
    problem = yardstick_problem(base, pr)
    if problem is None:
        return c
    kept = [r for r in c.reasons if c.verdict == "inconclusive"]
    kept += [f"would block: {r}" for r in c.reasons if c.verdict == "regression"]
    reasons = [problem, *kept]
    return c.model_copy(update={"verdict": "inconclusive", "exit_code": 3, "reasons": reasons,
                                "headline": "Inconclusive: " + "; ".join(reasons)})


def uncommitted_note(base: Results) -> str | None:
    """A line for every report when the baseline holds runs made from a working tree with
    uncommitted changes (``gate baseline`` marks them): its commit is not what it measured."""
    marks = (base.model_extra or {}).get("uncommitted")
    if not marks:
        return None
    n = len(marks) if isinstance(marks, list) else 1
    return (f"The baseline holds {n} refresh{'es' if n != 1 else ''} made from a working tree "
            "with uncommitted changes: the commit it names is not the agent it measured.")


def file_share(pr: Results, plan: RunPlan | None) -> float:
    """The share of the levels ``pr``'s last look spends (:func:`look_share`): a planned
    file's from its (checked) plan's looks and the looks it ran, whatever its ``schedule``
    says; a file that records sequential looks without a plan ran the two looks before plans
    (½); a fixed run all of it."""
    if plan is not None and pr.plan is not None:
        return look_share(plan.looks, pr.plan.looks_run)
    looks = pr.schedule.sequential if pr.schedule is not None else None
    return look_share(2, len(looks)) if looks else 1.0


def alpha_note(settings: GateSettings, *, share: float) -> str:
    """How the verdict's α was shared when the skill-effect test joined it (``share``: the
    part of it the file's sequential look spends, 1 for a fixed run)."""
    half = settings.alpha / 2
    looks = (f" (α/{round(2 / share)} = {half * share:g} at this sequential look)"
             if share < 1 else "")
    return (f"Skill conditions: the pass-rate test and the skill-effect test share "
            f"α = {settings.alpha:g} (Bonferroni): pass rate at α/2 = {half:g}{looks}, the "
            f"skill's effect at α/2 = {half:g}.")


def with_skill_effect(c: Comparison, effect: SkillEffect, *, interrupted: bool = False,
                      expected: bool = False) -> Comparison:
    """The comparison with the skill-effect check in it; when the check blocks, a regression
    (an interrupted arm stays inconclusive, as in :func:`compare`). ``expected``: both files
    hold the conditions, so a check that could not be made is inconclusive, never a pass."""
    update: dict[str, object] = {"skill_effect": effect}
    if expected and effect.p_value is None and c.verdict == "pass":
        reason = effect.note or "the skill's effect was not tested"
        update.update(verdict="inconclusive", exit_code=3, reasons=[reason],
                      headline="Inconclusive: " + reason)
    if effect.blocks:
        reason = skill_effect_reason(effect)
        if interrupted:  # what survived is shown; neither verdict would be honest
            reasons = [*c.reasons, f"would block: {reason}"]
            update.update(reasons=reasons, headline="Inconclusive: " + "; ".join(reasons))
        else:
            # the metrics' own reasons when they block too; "could not compare all" is outranked
            reasons = [*(c.reasons if c.verdict == "regression" else []), reason]
            update.update(verdict="regression", exit_code=1, reasons=reasons,
                          headline="Regression: " + "; ".join(reasons))
    return c.model_copy(update=update)


def decisive_p(c: Comparison) -> float | None:
    """The pass-rate p-value the decision rests on (the max test counts with a deep baseline)."""
    t = c.pass_rate_test
    if t is None:
        return None
    return _stats.decisive_p(t.p_sum, t.p_max, t.deep_baseline)


def planned_runs_text(per_task: Mapping[str, int], unit: str = " runs per task") -> str:
    """"2 runs per task" (``unit`` after a count every task shares), or when a plan spreads
    the runs "1–3 runs per task (mean 1.7, 25 in all)"."""
    counts = sorted(per_task.values()) or [0]
    if counts[0] == counts[-1]:
        return f"{counts[0]}{unit}"
    mean = sum(counts) / len(counts)
    return f"{counts[0]}–{counts[-1]}{unit or ' per task'} (mean {mean:.1f}, {sum(counts)} in all)"


def sequential_note(c: Comparison, looks: Sequence[int], settings: GateSettings, *,
                    plan: RunPlan | None = None, looks_run: int | None = None) -> str:
    """What the sequential design decided: from the plan when the file ran one (each task's
    own runs per look, the spread said), else from the looks the results file records (the
    runs per task of each look, every task alike; two looks, the design before plans)."""
    if plan is not None:
        n, design = looks_run or len(looks), plan.looks
        first, rest = plan.look(0), plan.through(n)
        more = {t: rest[t] - first[t] for t in first}
    else:
        n, design = len(looks), 2
        first = {"": looks[0]}
        more, rest = {"": sum(looks[1:])}, {"": sum(looks)}
    share = look_share(design, n)
    level = (f"α/{round(1 / share)} = {settings.alpha * share:g}; {said(PERMUTED_GATING)} at "
             f"metric_alpha/{round(1 / share)} = {settings.metric_alpha * share:g}")
    p = decisive_p(c)
    p_text = f"p = {p:.3g}" if p is not None else "no pass-rate test"
    if n < design:
        ran = (f"{planned_runs_text(first)} were enough" if n == 1 else
               f"the first {planned_runs_text(first)} were not conclusive, so "
               f"{planned_runs_text(more, '')} more ran in {n - 1} more look"
               f"{'s' if n > 2 else ''}, and they were enough")
        # the stop is the settings' when they are the file's design (a file of another design
        # is judged at its own levels; its stop was its run's business)
        stop = (f"; stop at p > {settings.stop_p(n - 1):g}"
                if design == settings.sequential_looks else "")
        return f"Sequential run, look {n} of {design}: {ran} ({p_text}; block at {level}{stop})."
    return (f"Sequential run, look {n} of {design}: the first {planned_runs_text(first)} were "
            f"not conclusive, so {planned_runs_text(more, '')} more ran; decided on all "
            f"{planned_runs_text(rest, '')} ({p_text}) at {level}.")
