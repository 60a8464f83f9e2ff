"""The verdict of a judged run: ``compare.judge`` with main's history. Light on purpose (no
runner, no forge): ``gate compare`` and ``gate report`` load only this of ``gate ci``."""

from __future__ import annotations

from gate.compare import SIM_UNJUDGED_DEFAULT, Comparison
from gate.core.config import GateSettings, SimUnjudged
from gate.core.history import parse_history
from gate.core.results import Results


def verdict(baseline: Results, results: Results, settings: GateSettings,
            history_text: str | None,
            sim_unjudged: SimUnjudged = SIM_UNJUDGED_DEFAULT, *,
            names: tuple[str, str] = ("the baseline", "the results file")) -> Comparison:
    """``compare.judge`` with main's history (its drift guard): what ``gate ci``, ``gate
    compare`` and ``gate report`` all call, so the comment, the terminal and the HTML page
    give one answer from the same files, locally and in CI.
    ``history_text`` None: no history (a same-job A/B has no drift to guard against).
    ``sim_unjudged``: ``[ci] sim_unjudged`` of the config in force (the base branch's).
    ``names``: how a refusal names the two files (a planned file's plan check)."""
    from gate.compare import judge as compare_judge

    history = () if history_text is None else parse_history(history_text)
    return compare_judge(baseline, results, settings, history, sim_unjudged=sim_unjudged,
                         names=names)
