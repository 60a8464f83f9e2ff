"""Does the verdict depend on the schedule? False blocks of the unchanged agent, and blocks of
real caching regressions, under many schedules against one baseline.

The schedule-robust counterpart of ``bench/bench_verdict.py``: there the runs are synthetic and
exchangeable by construction; here they are real runs of this repository's agent (gate.toml,
the bundled suite) on the simulator, through the library calls `gate run`, `gate baseline`,
`gate compare` and sequential `gate ci` make (``run_suite``, ``promote``, ``compare``,
``run_sequential``), so whatever the schedule changes — how warm the prompt cache is when a run
starts, how many runs share it — reaches the verdict as it would in CI.

* Baseline: ``--baseline-refreshes`` (3) runs of ``gate run --sim -k 3`` with different seeds,
  each promoted with ``gate.pool.baseline.promote`` as `gate baseline` does (9 runs per task, the
  shape of the committed baseline.json). The unchanged configuration, [suite].jobs at once.
* Schedules: k ∈ ``--ks`` × jobs ∈ ``--jobs`` × sequential off/on. "Sequential on" is the
  `gate ci` sequential design with a first look at k runs per task (``sequential_first = k``)
  and ``sequential_more`` ([gate], 3) more over the later looks, each only when the look before
  it is unsure; off is one fixed-k run. Each schedule is repeated ``--repetitions`` times with
  different simulator seeds.
* Variants: the unchanged agent (every block is a false block), and three real caching
  regressions that must block under every schedule: ``{{ now }}`` at the top of the system
  prompt (a prefix that never repeats), ``cache = "off"``, and the moving breakpoint removed —
  the builtin agent marks the newest turn's last block (``BuiltinAgent._messages``); this
  variant patches that method to leave the history unmarked (only tools + system cached).
  The patch is in-process (``unittest.mock.patch.object``), so it holds for the builtin
  agent's runs only, which are the runs here.

The figures come from ``compare()``'s verdict and its per-metric results (``blocks``,
``significant``, ``gating``), never from how a metric is computed, so the benchmark keeps
meaning the same when the metering changes.

    python bench/bench_schedule.py [--quick] [--repetitions R] [--ks 1 2 3 5] [--jobs 1 8]
        [--sequential off on] [--variants unchanged now cache-off no-moving-breakpoint]

One suite run (16 tasks, k = 1) takes 20–60 s on 2 shared cores, so the full grid —
Σk × 2 jobs × (1 fixed + ≤ 3 sequential looks) ≈ 50–70 suite-replications per variant and
repetition, plus 9 for the baseline — takes hours. ``--quick`` is k ∈ {1, 3}, jobs ∈ {1, 8},
both sequential settings, one repetition. Each comparison is logged to stderr as it finishes,
so a benchmark cut short keeps its figures.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from gate.agents._builtin import BuiltinAgent
from gate.compare import Comparison, compare
from gate.core.config import GateConfig, GateSettings, load_config
from gate.core.results import Results, load_results, write_results
from gate.execution.run import RunRequest, run_suite
from gate.execution.sequential import run_sequential
from gate.pool.baseline import promote

REPO = Path(__file__).resolve().parents[1]
METRICS = ("pass_rate", "turns", "cost", "cache_hit_rate")
VARIANTS = ("unchanged", "now", "cache-off", "no-moving-breakpoint")
LABELS = {
    "unchanged": "unchanged agent",
    "now": "{{ now }} in the system prompt",
    "cache-off": 'cache = "off"',
    "no-moving-breakpoint": "moving breakpoint removed",
}


@dataclass(frozen=True)
class Schedule:
    k: int
    jobs: int
    sequential: bool

    @property
    def label(self) -> str:
        return f"k={self.k} jobs={self.jobs} " + ("sequential" if self.sequential else "fixed")


@dataclass
class Tally:
    reps: int = 0
    regressions: int = 0  # verdict == regression
    blocks: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(METRICS, 0))
    significant: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(METRICS, 0))
    not_gating: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(METRICS, 0))
    deltas: dict[str, list[float]] = dataclasses.field(
        default_factory=lambda: {m: [] for m in METRICS})
    verdicts: list[str] = dataclasses.field(default_factory=list)

    def add(self, c: Comparison) -> None:
        self.reps += 1
        self.regressions += c.verdict == "regression"
        self.verdicts.append(c.verdict)
        for m in c.metrics:
            if m.name not in self.blocks:
                continue
            self.blocks[m.name] += m.blocks
            self.significant[m.name] += m.significant
            self.not_gating[m.name] += (not m.gating) or m.verdict == "n/a"
            if m.delta is not None:
                self.deltas[m.name].append(m.delta)


def variant_config(variant: str, cfg: GateConfig, tmp: Path) -> GateConfig:
    update: dict[str, Any] = {}
    if variant == "now":
        prompt = tmp / "system-now.md"
        base = cfg.path(cfg.agent.system_prompt) if cfg.agent.system_prompt else None
        prompt.write_text("Current time: {{ now }}\n" + (base.read_text() if base else ""))
        update["system_prompt"] = str(prompt)
    elif variant == "cache-off":
        update["cache"] = "off"
    return cfg.model_copy(update={"agent": cfg.agent.model_copy(update=update)})


def _unmarked(self: BuiltinAgent, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``_messages`` without the moving breakpoint: the history as it is."""
    return [dict(m) for m in history]


@contextlib.contextmanager
def variant_patch(variant: str) -> Iterator[None]:
    if variant == "no-moving-breakpoint":
        with mock.patch.object(BuiltinAgent, "_messages", _unmarked):
            yield
    else:
        yield


def build_baseline(cfg: GateConfig, refreshes: int, k: int, seed: int, tmp: Path,
                   log: Any) -> Results:
    baseline: Results | None = None
    for i in range(refreshes):
        t0 = time.monotonic()
        res = run_suite(RunRequest(config=cfg, output=tmp / f"baseline-{i}.json",
                                   replications=k, sim=True, transcripts=False,
                                   seed=seed + i))
        baseline, msg = promote(res, baseline, pool_size=cfg.gate.pool_size)
        log(f"baseline refresh {i + 1}/{refreshes} (seed {seed + i}, k={k}): {msg} "
            f"[{time.monotonic() - t0:.0f} s]")
        time.sleep(1.1)  # refreshes are told apart by their creation second
    assert baseline is not None
    return baseline


def measure(cfg: GateConfig, baseline: Results, s: Schedule, seed: int, settings: GateSettings,
            out: Path) -> Comparison:
    req = RunRequest(config=cfg, output=out, replications=s.k, jobs=s.jobs, sim=True,
                     transcripts=False, seed=seed)
    if s.sequential:
        seq = settings.model_copy(update={"sequential_first": s.k})
        return run_sequential(req, baseline, seq).comparison
    return compare(baseline, run_suite(req), settings)


def run_grid(configs: dict[str, GateConfig], baseline: Results, schedules: list[Schedule],
             reg_ks: set[int], reps: int, seed: int, settings: GateSettings, tmp: Path,
             results: dict[tuple[str, Schedule], Tally], log: Any) -> None:
    """Schedule by schedule, so a run cut short has covered every variant at small k."""
    for s in schedules:
        for v, vcfg in configs.items():
            if v != "unchanged" and s.k not in reg_ks:
                continue
            tally = results.setdefault((v, s), Tally())
            for r in range(reps):
                seed += 1
                t0 = time.monotonic()
                with variant_patch(v):
                    c = measure(vcfg, baseline, s, seed, settings, tmp / "cand.json")
                tally.add(c)
                blocks = [m.name for m in c.metrics if m.blocks]
                log(f"{LABELS[v]} · {s.label} · rep {r + 1}/{reps} (seed {seed}): "
                    f"{c.verdict}{' on ' + ', '.join(blocks) if blocks else ''} "
                    f"[{time.monotonic() - t0:.0f} s]")


def _cell(t: Tally, metric: str) -> str:
    cell = f"{t.blocks[metric]}/{t.reps}"
    extra = []
    if t.significant[metric] != t.blocks[metric]:
        extra.append(f"sig {t.significant[metric]}")
    if t.not_gating[metric]:
        extra.append(f"not gating {t.not_gating[metric]}")
    if t.deltas[metric]:
        d = sum(t.deltas[metric]) / len(t.deltas[metric])
        extra.append(f"Δ {100 * d:+.1f} pts" if metric in ("pass_rate", "cache_hit_rate")
                     else f"Δ {100 * d:+.0f} %")
    return cell + (f" ({', '.join(extra)})" if extra else "")


def print_table(results: dict[tuple[str, Schedule], Tally], variants: list[str],
                schedules: list[Schedule]) -> None:
    print("| variant | schedule | pass rate | turns | cost | cache-hit rate | "
          "verdict: regression | verdicts |")
    print("|---|---|---|---|---|---|---:|---|")
    for v in variants:
        for s in schedules:
            t = results.get((v, s))
            if t is None or not t.reps:
                continue
            cells = " | ".join(_cell(t, m) for m in METRICS)
            print(f"| {LABELS[v]} | {s.label} | {cells} | {t.regressions}/{t.reps} | "
                  f"{', '.join(t.verdicts)} |")
    for v in variants:
        ts = [results[(v, s)] for s in schedules if (v, s) in results]
        reps = sum(t.reps for t in ts)
        if not reps:
            continue
        per_metric = ", ".join(f"{m} {sum(t.blocks[m] for t in ts)}" for m in METRICS)
        blocked = sum(t.regressions for t in ts)
        print(f"\n{LABELS[v]}: blocked {blocked}/{reps} comparisons "
              f"({100 * blocked / reps:.0f} %); blocks per metric: {per_metric}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="k ∈ {1, 3}, jobs ∈ {1, 8}, sequential off and on, 1 repetition")
    ap.add_argument("--repetitions", "-R", type=int, default=None,
                    help="comparisons per schedule and variant, each with its own seed "
                         "(default 1)")
    ap.add_argument("--ks", type=int, nargs="+", default=None, help="default: 1 2 3 5")
    ap.add_argument("--jobs", type=int, nargs="+", default=None, help="default: 1 8")
    ap.add_argument("--sequential", choices=("off", "on"), nargs="+", default=None,
                    help="default: off on")
    ap.add_argument("--variants", choices=VARIANTS, nargs="+", default=list(VARIANTS))
    ap.add_argument("--regression-ks", type=int, nargs="+", default=None,
                    help="k values for the regression variants (default: as --ks)")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="use this baseline file instead of building one")
    ap.add_argument("--write-baseline", type=Path, default=None,
                    help="save the baseline built here (to share it between benchmark runs)")
    ap.add_argument("--baseline-refreshes", type=int, default=3)
    ap.add_argument("--baseline-k", type=int, default=3)
    ap.add_argument("--permutations", type=int, default=None,
                    help="relabellings per metric test (default: [gate].permutations)")
    ap.add_argument("--config", type=Path, default=REPO / "gate.toml")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args(argv)
    ks = args.ks or ([1, 3] if args.quick else [1, 2, 3, 5])
    jobs = args.jobs or [1, 8]
    seq_modes = args.sequential or ["off", "on"]
    reps = args.repetitions or 1
    schedules = [Schedule(k, j, mode == "on") for k in ks for j in jobs for mode in seq_modes]
    reg_ks = set(args.regression_ks or ks)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    cfg = load_config(args.config)
    settings = cfg.gate
    if args.permutations:
        settings = settings.model_copy(update={"permutations": args.permutations})
    start = time.monotonic()
    results: dict[tuple[str, Schedule], Tally] = {}
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="bench-schedule-") as d:
        tmp = Path(d)
        if args.baseline is not None:
            baseline = load_results(args.baseline, "baseline")
            n_base = f"{args.baseline} ({len(baseline.runs)} runs)"
        else:
            baseline = build_baseline(cfg, args.baseline_refreshes, args.baseline_k, args.seed,
                                      tmp, log)
            n_base = f"{args.baseline_refreshes} × k={args.baseline_k} runs"
            if args.write_baseline is not None:
                write_results(args.write_baseline, baseline)
        configs = {v: variant_config(v, cfg, tmp) for v in args.variants}
        try:
            run_grid(configs, baseline, schedules, reg_ks, reps, args.seed + 1000, settings,
                     tmp, results, log)
        except KeyboardInterrupt:
            interrupted = True
            log("interrupted: the table below covers the comparisons finished so far")
    elapsed = time.monotonic() - start
    print(f"Schedule benchmark: bundled suite on the simulator, baseline pooled from "
          f"{n_base}; {reps} repetition(s) per "
          f"schedule; alpha {settings.alpha}, metric alpha {settings.metric_alpha}, "
          f"{settings.permutations} permutations; {elapsed / 60:.0f} min"
          f"{' (interrupted: partial)' if interrupted else ''}.\n")
    print("Cells: comparisons in which the metric blocked / repetitions (sig = significant "
          "but inside the margin; Δ = mean change vs the baseline).\n")
    print_table(results, args.variants, schedules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
