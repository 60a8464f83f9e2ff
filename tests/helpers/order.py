"""The order the tests run in under xdist: the longest modules first, on every worker.

``--dist worksteal`` hands each worker a contiguous share of the collection (the first
``n // workers`` items to the first worker, and so on) and, when a worker runs dry, moves the
*end* of another worker's queue to it. A long test near the end of a share is therefore what
decides the run's wall time: on two workers one 2-minute test started last is 2 minutes with
one core idle. So the modules that take long (:data:`MODULE_SECONDS`, measured; a module not
listed is estimated from its markers) are dealt out to the workers, longest first, each to the
share with the least work so far, and placed at the *start* of that share; the quick modules
fill the rest in their usual order, and are what the other worker steals at the end.

Whole modules move, never single tests: a module's tests stay together, so its module-scoped
fixtures (an image, a browser, a built report) are still built once per worker; and the modules
that use one of :data:`SHARED` (session fixtures that take long to build: the action installed
into a runner's venv) move together, onto one worker, which builds it once. Within a module the
order is the file's. Nothing is reordered without xdist (``-n 0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

#: seconds of wall time per module on two workers (`--durations`, a fresh clone, 2026-12-03);
#: only the ones that matter for the order: a module not here is estimated (:func:`_guess`)
MODULE_SECONDS: dict[str, float] = {
    "tests/sandbox/test_agent_install.py": 130,
    "tests/sandbox/test_harbor_real.py": 125,
    # 5 `gate run --sim` of 9 runs, a dozen `gate compare`s (-n 0, 2026-12-06: 150 s)
    "tests/e2e/test_sim_unjudged.py": 120,
    "tests/execution/test_conditions_effects.py": 50,
    "tests/execution/test_resume.py": 50,
    "tests/execution/test_conditions.py": 45,
    "tests/execution/test_run_sim.py": 45,
    "tests/execution/test_upstream_gateway.py": 100,
    "tests/ci/test_github_action.py": 45,
    "tests/ci/test_ci_sim_unjudged.py": 40,  # two `gate ci --sim` PRs (-n 0: 39 s)
    "tests/sandbox/test_harbor_skills.py": 35,
    "tests/sandbox/test_phase_boundary.py": 35,
    "tests/execution/test_schedule.py": 30,
    "tests/sandbox/test_netguard.py": 30,
    "tests/execution/test_shards.py": 25,
    "tests/sandbox/test_harbor.py": 25,
    "tests/sandbox/test_docker.py": 25,
    "tests/execution/test_metered_runs.py": 25,
    "tests/ci/test_matrix.py": 25,
    "tests/ci/test_ci_skills.py": 25,
    "tests/e2e/test_comment_screen.py": 20,
    "tests/e2e/test_init.py": 20,
    "tests/execution/test_budget.py": 15,
    # round five's modules (2026-12-06): what their authors timed alone on a loaded machine,
    # or, where marked, a guess from their runs; re-measure with --durations
    "tests/e2e/test_gatecheck.py": 90,
    "tests/sandbox/test_tamper.py": 60,  # guess: an install and six Harbor runs
    "tests/sandbox/test_disk_quota.py": 60,  # guess: three backends, an install, a tmpfs
    "tests/sandbox/test_netguard_private.py": 60,  # guess: six guarded containers
    "tests/e2e/test_infra_on_one_task.py": 55,
    "tests/e2e/test_unclear_cli.py": 45,  # guess: three simulator runs of 12
    "tests/execution/test_meter_provider.py": 30,
    "tests/sandbox/test_agent_breaks_container.py": 20,
    "tests/e2e/test_agent_paths.py": 20,  # guess: twenty gate starts
    "tests/sandbox/test_verifier_home.py": 16,
    "tests/e2e/test_report_html.py": 15,
    "tests/e2e/test_report_phone.py": 120,  # five simulator runs, six reports, two widths
    "tests/e2e/test_one_verdict.py": 100,  # six simulator runs, five reports (-n 0, alone)
    # issue 39's README item (2026-12-06, each alone on a loaded machine)
    "tests/sandbox/test_test_images.py": 120,  # a base image by debootstrap: 260 s loaded
    "tests/e2e/test_readme_quick_start.py": 80,
    "tests/e2e/test_pictures.py": 65,
    # issue 39's other new modules (helpers' figures, each alone on a loaded machine)
    "tests/ci/test_ci_broken.py": 40,
    "tests/e2e/test_broken_tasks.py": 40,
    "tests/e2e/test_adoption_guards.py": 30,
    "tests/e2e/test_errors_name_the_fix.py": 20,
    "tests/e2e/test_prefix_not_cached.py": 40,
    "tests/e2e/test_suite_health.py": 10,
    "tests/e2e/test_validate_build_output.py": 30,
    "tests/sandbox/test_install_skills.py": 60,
}
#: session fixtures worth building on one worker only: their modules go together
SHARED = ("installed",)
#: a module with this much estimated work or more is placed at the start of a share
HEAVY = 10.0


class Item(Protocol):
    nodeid: str
    fixturenames: Sequence[str]

    def get_closest_marker(self, name: str) -> object | None: ...


def _module(item: Item) -> str:
    return item.nodeid.split("::", 1)[0]


def _units(items: Sequence[Item]) -> dict[str, list[Item]]:
    """The items by module, and the modules that share one of :data:`SHARED` as one unit."""
    modules: dict[str, list[Item]] = {}
    for it in items:
        modules.setdefault(_module(it), []).append(it)
    units: dict[str, list[Item]] = {}
    for m, its in modules.items():
        shared = [f for f in SHARED if any(f in getattr(it, "fixturenames", ()) for it in its)]
        units.setdefault(f"fixture:{shared[0]}" if shared else m, []).extend(its)
    return units


def _cost(items: Sequence[Item]) -> float:
    modules = {_module(it) for it in items}
    return sum(MODULE_SECONDS.get(m) or _guess([it for it in items if _module(it) == m])
               for m in modules)


def _guess(items: Sequence[Item]) -> float:
    """A module's seconds from its markers: a container test ~4 s, another slow one ~1.5 s."""
    total = 0.0
    for it in items:
        slow = it.get_closest_marker("slow") is not None
        docker = it.get_closest_marker("docker") is not None
        total += 4.0 if slow and docker else 1.5 if slow else 0.05
    return total


def workers(cores: int, markexpr: str) -> int:
    """How many workers ``-n auto`` starts (``--maxprocesses`` caps it): one per core, and one
    more when the slow tests run. Those wait on the Docker engine, the package registries and
    their own sleeps as much as they compute: with one worker per core a whole run left the
    machine 19 % idle (``vmstat``, 2 cores), and a third worker took the run from 645 s to
    589 s (docs/performance.md). The quick loop (``-m "not slow"``) only computes."""
    return cores if "not slow" in markexpr else cores + 1


def longest_first(items: list[Item], workers: int) -> list[Item]:
    """``items`` reordered for ``workers`` worksteal workers (see the module's docstring)."""
    if workers < 2 or len(items) < 2 * workers:
        return items
    modules = _units(items)
    cost = {m: _cost(its) for m, its in modules.items()}
    heavy = sorted((m for m in modules if cost[m] >= HEAVY), key=lambda m: (-cost[m], m))
    light = [it for m, its in modules.items() if m not in heavy for it in its]
    # the shares xdist deals: the i-th idle worker gets len(pending) // workers_left items
    sizes, left = [], len(items)
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    shares: list[list[Item]] = [[] for _ in range(workers)]
    work = [0.0] * workers
    for m in heavy:  # each to the share with the least work so far that has room for it
        fits = [i for i in range(workers) if len(shares[i]) + len(modules[m]) <= sizes[i]]
        i = min(fits or range(workers), key=lambda j: work[j])
        shares[i] += modules[m]
        work[i] += cost[m]
    ordered: list[Item] = []
    for i in range(workers):
        room = max(0, sizes[i] - len(shares[i]))
        ordered += shares[i] + light[:room]
        light = light[room:]
    return ordered + light
