"""Cache-hit rate of the builtin agent on the bundled suite, against the best possible.

Runs the bundled suite under the simulator through `gate run`'s own code path, records every
request the meter forwards, and computes the best hit rate any caching strategy could reach
for *that same sequence of requests*: an ideal cache that keeps every prefix it has ever seen,
forever, at every block boundary. Then the same with ``{{ now }}`` in the system prompt, and
with a "system + tools only" strategy (the blog-post harness) for reference.

    python bench/bench_cache.py [--replications 1] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path

from gate.core.config import load_config
from gate.execution.run import RunRequest, run_suite
from gate.sim._cache import flatten

REPO = Path(__file__).resolve().parents[1]


def best_possible(bodies: list[bytes]) -> float:
    """Σ longest previously-seen prefix / Σ prompt tokens, over requests in arrival order."""
    seen: set[str] = set()
    read = total = 0
    for body in bodies:
        blocks = flatten(json.loads(body))
        cumulative, best = 0, 0
        for b in blocks:
            cumulative += b.tokens
            if b.digest in seen:
                best = cumulative
        read += best
        total += cumulative
        seen.update(b.digest for b in blocks)
    return read / total if total else 0.0


def measure(label: str, system_prompt: Path | None, cache: str, k: int, jobs: int,
            tmp: Path) -> tuple[str, float, float, float]:
    cfg = load_config(REPO / "gate.toml")
    update: dict[str, object] = {"cache": cache}
    if system_prompt is not None:
        update["system_prompt"] = str(system_prompt)
    cfg = cfg.model_copy(update={"agent": cfg.agent.model_copy(update=update)})
    bodies: list[bytes] = []
    lock = threading.Lock()

    def observe(run_id: str, body: bytes) -> None:
        with lock:
            bodies.append(body)

    res = run_suite(RunRequest(config=cfg, output=tmp / f"{label}.json", replications=k,
                               jobs=jobs, sim=True, transcripts=False,
                               request_observer=observe))
    actual = res.summary.cache_hit_rate or 0.0
    best = best_possible(bodies)
    return label, actual, best, res.summary.cost_usd


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replications", "-k", type=int, default=1)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        now_prompt = tmp / "now.md"
        now_prompt.write_text("Current time: {{ now }}\n"
                              + (REPO / "agent" / "system.md").read_text())
        rows = [
            measure("builtin (tools + system + moving turn)", None, "5m", args.replications,
                    args.jobs, tmp),
            measure("builtin with {{ now }} in the system prompt", now_prompt, "5m",
                    args.replications, args.jobs, tmp),
            measure("builtin, cache off", None, "off", args.replications, args.jobs, tmp),
        ]
    print(f"bundled suite under the simulator, k={args.replications}")
    print(f"{'configuration':48} {'hit rate':>9} {'best possible':>14} {'of best':>8} "
          f"{'cost $':>9}")
    for label, actual, best, cost in rows:
        share = actual / best if best else 0.0
        print(f"{label:48} {actual:9.3f} {best:14.3f} {share:8.1%} {cost:9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
