"""The suite-wide single flight of each prefix family's first messages request (see the
package docstring: what is billed)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gate.meter._run import RunMeter

#: the longest a request waits for its prefix family's first response to begin: a leader that
#: stalls (a hung connection) must not hold every run of the suite for the upstream timeout;
#: past it the request goes anyway, and at worst pays a cache write of the prefix again
FIRST_FLIGHT_WAIT_S = 60.0


class _FirstFlights:
    """Single-flight of each prefix family's first messages request, suite-wide.

    A family is unseen, has its leader in flight, or is warm. The first request of a family
    that is not warm leads and goes at once; the family's other requests wait (never holding a
    lock while they do) until the leader's response has begun, then go and read the prefix
    it wrote. A leader that fails hands the lead to the next request. A wait is bounded, and
    ends when the waiting request's run is closed.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._warm: set[str] = set()
        self._leading: set[str] = set()

    def enter(self, family: str, run: RunMeter, timeout: float) -> bool | None:
        """True: this request leads (then ``done`` must follow); False: go (the family is warm,
        or the wait timed out); None: the run was closed while waiting."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if family in self._warm:
                    return False
                if family not in self._leading:
                    self._leading.add(family)
                    return True
                if run.closed:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)

    def done(self, family: str, began: bool) -> None:
        """The leader's response began (the family is warm) or the leader failed."""
        with self._cond:
            self._leading.discard(family)
            if began:
                self._warm.add(family)
            self._cond.notify_all()

    def wake(self) -> None:
        """A run was closed: its waiting requests stop waiting."""
        with self._cond:
            self._cond.notify_all()


class _Lead:
    """A leading request's hold on its family: released once, when its response begins or
    (``release``, always called) when it ends without having begun."""

    def __init__(self, flights: _FirstFlights, family: str) -> None:
        self._flights = flights
        self._family = family
        self._held = True

    def began(self) -> None:
        if self._held:
            self._held = False
            self._flights.done(self._family, True)

    def release(self) -> None:
        if self._held:
            self._held = False
            self._flights.done(self._family, False)
