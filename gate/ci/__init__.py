"""``gate ci``: one CI job as stages over frozen data — event → plan → obtain → judge →
publish (gate/ci/_run.py draws the pipeline). GitHub itself (REST, the Actions environment,
outputs, the sticky and deferred comment, git with the token, the refresh's files) is
``gate.github``'s: this package decides, that one talks.

- ``find_event`` (``_event``): what kind of run this is, and what is refused; pure.
- ``open_basis``/``make_plan`` (``_plan``): the base branch's yardstick and how the run is
  judged; ``refresh_plan`` for main's refresh. No runs.
- ``obtain`` (``_obtain``): the results, from a fresh run, sequential looks, a same-job A/B,
  stored results, one shard or the merged shards.
- ``judge`` (``_judge``) with ``_policy``: the verdict, the exit code, accept, budget, infra.
- ``Publisher`` (``_publish``), ``refresh`` (``_refresh``), ``post_uploaded_report``
  (``_comment``): what the job leaves behind.
"""

from gate.ci._event import Event, find_event
from gate.ci._options import CIOptions, CIOverrides
from gate.ci._policy import check_budget, check_refresh_infra, outcome
from gate.ci._run import run_ci

__all__ = ["CIOptions", "CIOverrides", "Event", "check_budget", "check_refresh_infra",
           "find_event", "outcome", "run_ci"]
