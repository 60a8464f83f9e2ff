"""``gate ci``: one CI job as stages over frozen data — event → plan → obtain → judge →
publish (gate/ci/_run.py draws the pipeline). The stages talk to the forge through a port
(``_forge``: the change request, its files and labels and who set one, the comment, git with
the token, the CI environment's facts, the job's outputs); ``_github`` is the one module here
that adapts a forge (GitHub's adapters) to it. This package decides, the adapters talk.

- ``find_event`` (``_event``): what kind of run this is, and what is refused; pure.
- ``open_basis``/``make_plan`` (``_plan``): the base branch's yardstick and how the run is
  judged; ``refresh_plan`` for main's refresh. No runs.
- ``obtain`` (``_obtain``): the results, from a fresh run, sequential looks, a same-job A/B,
  stored results, one shard or the merged shards.
- ``open_base``/``base_baseline`` (``_yardstick``): the base's yardstick and baseline, as every
  judge of a PR opens them (``gate compare --base-ref`` too).
- ``judge`` (``_judge``) with ``_policy``: the verdict, the exit code, accept, budget, infra.
- ``Publisher`` (``_publish``), ``refresh`` (``_refresh``), ``post_uploaded_report``
  (``_comment``): what the job leaves behind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gate._lazy import lazy_names

if TYPE_CHECKING:
    from gate.ci._event import Event, find_event
    from gate.ci._options import CIOptions, CIOverrides
    from gate.ci._plan import measured_by
    from gate.ci._policy import check_budget, check_infra, outcome
    from gate.ci._run import run_ci
    from gate.ci._verdict import verdict
    from gate.ci._yardstick import base_baseline, open_base

#: each name's private module, loaded on first use (``gate compare`` needs the judge only)
_WHERE = {
    "Event": "_event", "find_event": "_event", "verdict": "_verdict",
    "CIOptions": "_options", "CIOverrides": "_options", "measured_by": "_plan",
    "check_budget": "_policy", "check_infra": "_policy",
    "outcome": "_policy",
    "run_ci": "_run", "open_base": "_yardstick", "base_baseline": "_yardstick",
}

__all__ = ["CIOptions", "CIOverrides", "Event", "base_baseline", "check_budget", "check_infra",
           "find_event", "measured_by", "open_base", "outcome", "run_ci",
           "verdict"]
assert sorted(__all__) == sorted(_WHERE)

__getattr__ = lazy_names(__name__, _WHERE, globals())
