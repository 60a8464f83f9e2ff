"""The simulator as an object: started in-process (``gate run --sim``) or by ``gate sim serve``."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from gate.errors import GateError
from gate.sim._cache import PromptCache
from gate.sim._faults import FaultConfig, Latency
from gate.sim._ledger import Ledger
from gate.sim._model import SimModel, load_tasks
from gate.sim._server import Engine, SimServer
from gate.upstream import get_upstream

log = logging.getLogger("gate.sim")


class Simulator:
    """A real HTTP server on loopback that answers like the Messages API, with a fake model.

    ``tasks_dir`` is the suite the model can solve (none: generic answers only). ``seed`` fixes
    outcomes and faults. ``clock`` (seconds, default ``time.time``) drives cache TTLs and ledger
    times, so tests can expire entries without sleeping. The ledger starts empty at ``start()``;
    without ``ledger_path`` it goes to a temporary file that is removed on ``close()``, so pass a
    path to keep it.
    """

    def __init__(
        self,
        tasks_dir: Path | None = None,
        seed: int = 0,
        faults: FaultConfig | None = None,
        latency: Latency | None = None,
        clock: Callable[[], float] | None = None,
        ledger_path: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        auth: str = "anthropic",
        credential: str | None = None,
    ) -> None:
        """``auth``: the upstream (gate.upstream) whose authentication the simulator checks,
        with ``credential`` the one it accepts (None: any its rule accepts)."""
        self.auth = get_upstream(auth, where="simulator auth")
        self.credential = credential
        self.tasks_dir = Path(tasks_dir) if tasks_dir is not None else None
        self.seed = seed
        self.faults = faults or FaultConfig()
        self.latency = latency or Latency()
        self.clock = clock or time.time
        self.host = host
        self.port = port
        self._own_ledger_dir: tempfile.TemporaryDirectory[str] | None = None
        if ledger_path is None:
            self._own_ledger_dir = tempfile.TemporaryDirectory(prefix="gate-sim-")
            ledger_path = Path(self._own_ledger_dir.name) / "ledger.jsonl"
        self.ledger_path = Path(ledger_path)
        self._server: SimServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise GateError("simulator: not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Simulator:
        """Bind (a free port when ``port`` is 0) and serve in a background thread."""
        if self._server is not None:
            return self
        engine = Engine(
            model=SimModel(load_tasks(self.tasks_dir), seed=self.seed),
            cache=PromptCache(self.clock), faults=self.faults, latency=self.latency,
            ledger=Ledger(self.ledger_path), seed=self.seed, clock=self.clock,
        )
        try:
            self._server = SimServer((self.host, self.port), engine, self.auth,
                                     self.credential)
        except OSError as exc:
            raise GateError(f"simulator: cannot listen on {self.host}:{self.port}: {exc}") \
                from None
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="gate-simulator", daemon=True)
        self._thread.start()
        log.info("simulator: serving the Messages API at %s (seed %s)", self.base_url, self.seed)
        return self

    def serve_forever(self) -> None:
        """Run in the foreground until interrupted (``gate sim serve``)."""
        self.start()
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self._own_ledger_dir is not None:
            self._own_ledger_dir.cleanup()
            self._own_ledger_dir = None

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
