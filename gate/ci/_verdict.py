"""The verdict of a judged run: ``compare.judge`` with main's history. Light on purpose (no
runner, no forge): ``gate compare`` and ``gate report`` load only this of ``gate ci``."""

from __future__ import annotations

from gate.compare import Comparison
from gate.config import GateSettings
from gate.history import parse_history
from gate.results import Results


def verdict(baseline: Results, results: Results, settings: GateSettings,
            history_text: str | None) -> Comparison:
    """``compare.judge`` with main's history (its drift guard): what ``gate ci``, ``gate
    compare`` and ``gate report`` all call, so the comment, the terminal and the HTML page
    give one answer from the same files, locally and in CI.
    ``history_text`` None: no history (a same-job A/B has no drift to guard against)."""
    from gate.compare import judge as compare_judge

    if history_text is None:
        return compare_judge(baseline, results, settings)
    return compare_judge(baseline, results, settings, parse_history(history_text))
