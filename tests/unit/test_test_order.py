"""The order the suite runs in under xdist (tests/helpers/order.py): the long modules start
first on every worker, whole, and the modules sharing a costly session fixture stay together."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.helpers.order import MODULE_SECONDS, longest_first


@dataclass
class FakeItem:
    nodeid: str
    markers: tuple[str, ...] = ()
    fixturenames: tuple[str, ...] = field(default=())

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def _module(it: FakeItem) -> str:
    return it.nodeid.split("::")[0]


def _suite() -> list[FakeItem]:
    items = [FakeItem(f"tests/unit/test_q{m}.py::test_{i}") for m in range(20) for i in range(20)]
    long_ = [m for m in MODULE_SECONDS if "install" in m or "harbor_real" in m]
    items += [FakeItem(f"{m}::test_{i}", ("slow", "docker")) for m in long_ for i in range(4)]
    items += [FakeItem(f"tests/e2e/test_guessed.py::test_{i}", ("slow", "docker"))
              for i in range(3)]
    items += [FakeItem(f"tests/ci/test_s{m}.py::test_{i}", ("slow",), ("installed",))
              for m in range(2) for i in range(8)]
    return items


def test_the_longest_modules_open_the_workers_shares_whole() -> None:
    items = _suite()
    ordered = longest_first(list(items), 2)
    assert sorted(i.nodeid for i in ordered) == sorted(i.nodeid for i in items)
    half = len(items) // 2  # the first worker's share, as worksteal deals it
    firsts = {_module(ordered[0]), _module(ordered[half])}
    assert firsts == {"tests/sandbox/test_agent_install.py", "tests/sandbox/test_harbor_real.py"}
    # a module's tests stay together and in their order
    for m in {_module(i) for i in items}:
        at = [n for n, i in enumerate(ordered) if _module(i) == m]
        assert at == list(range(at[0], at[0] + len(at))) or m.startswith("tests/unit/"), m
        assert [ordered[n].nodeid for n in at] == [i.nodeid for i in items if _module(i) == m]
    # the modules of one costly session fixture run on one worker, and a module estimated from
    # its markers (3 container tests) counts as long
    shared = [n for n, i in enumerate(ordered) if "installed" in i.fixturenames]
    assert (max(shared) < half) or (min(shared) >= half)
    guessed = [n for n, i in enumerate(ordered) if "guessed" in i.nodeid]
    assert min(guessed) < half // 2 or half <= min(guessed) < half + half // 2


def test_nothing_moves_without_workers() -> None:
    items = _suite()
    assert longest_first(list(items), 1) == items


def test_a_run_with_the_slow_tests_gets_a_worker_more_than_cores_the_quick_loop_not() -> None:
    from tests.helpers.order import workers

    assert workers(2, "") == 3  # `python3 -m pytest`, as .ci/run runs it
    assert workers(2, "slow") == 3
    assert workers(2, "not slow") == 2  # the quick loop only computes
    assert workers(1, "not slow and not docker") == 1
