"""The plan against today's uniform looks: false blocks, power and runs per task, side by side.

Synthetic results with a known truth go through the code `gate ci` runs on a PR:
``gate.compare.plan_runs`` (the plan, from the baseline alone), ``gate.compare.judge`` (the
whole verdict: pass rate, turns, cost, cache-hit rate, resolution, unclear, each look at its
share of the levels) and ``gate.execution.sequential.first_look`` (stop, block, or look again),
as ``gate.execution.sequential.run_sequential`` strings them. Each draw makes one pooled
baseline (20 runs a task) and one PR's runs, and puts the SAME runs through three procedures:

* **today**: every task 2 runs, then 3 more when the first look is not clear (``plan =
  "uniform"``, the files carry no plan, as before issue 40);
* **two looks**: each task's runs per look from its own baseline pass rate
  (gate/compare/_plan.py), in the two looks the plan had before the third (``sequential_looks
  = 2``: 2 + 5 above half, 1 + 2 below), at α/2 a look, recorded in the file, judged given
  the plan;
* **three looks**: the shipped plan (``sequential_looks = 3``: 2 + 2 + 3 above half, 1 + 1 + 1
  below), at α/4, α/4 and α/2, stopping at p > 0.2 after the first look and 0.08 after the
  second (``sequential_pass_p``, or ``--stops``).

The suite: 15 tasks whose true pass rates spread from 0.3 to 1.0 (6 near 0.95, 6 near 0.7,
3 near 0.35: :data:`RATES`); turns, cost and cache hits with the per-run noise of
``gate.compare._synthetic``. Rows: an unchanged agent (A/A), three tasks collapsing (one easy,
one medium, one hard), one task collapsing (a random one each draw), every task −20 points,
the mid-rate task t06 (0.7) collapsing. Columns: blocks (exit 1), blocks + unclear +
inconclusive (any exit but 0), and runs per task; then what a harmless PR costs in dollars on
gate's price table for the default model, from the runs' token counts.

    python bench/bench_plan.py [--trials N] [--jobs J] [--seed S] [--permutations P]
        [--stops S1,S2]
    python bench/bench_plan.py --sim [--trials N]   # smoke: the bundled suite on the simulator

Each finished chunk's counts go to stderr as a JSON line, so a run cut short keeps its
figures. ``--sim`` runs ``gate run --sim``'s library path (:func:`gate.execution.run.run_suite` with
the simulator) on the bundled suite against the committed baseline.json: the plan it gives, then N
harmless PRs of the bundled agent, each through the plan's looks (one run_suite per group of tasks
with the same runs in a look), judged as `gate ci` judges them; it prints the plan, what each PR's
check shows (pass, unclear, inconclusive, blocked, with the exit code: an "unclear" comparison's
verdict field says "inconclusive" but it exits 0), the reasons of every look that was not a plain
pass (the metrics read unclear, with their power at the margin, or blind) and the runs per task.
docs/statistics.md §5a has the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.compare import Comparison, PlanSettings, RunPlan, judge, plan_runs
from gate.compare._synthetic import synthetic_results
from gate.core.config import AgentConfig, GateConfig, GateSettings, load_config
from gate.core.cost import price_table
from gate.core.results import Results, RunResult, Schedule, load_results, new_results, summarize
from gate.core.tasks import load_suite
from gate.execution.run import RunRequest, run_suite, suite_info
from gate.execution.sequential import first_look, second_look_runs
from gate.report import title_state

REPO = Path(__file__).resolve().parents[1]

#: the suite's true pass rates: 6 easy, 6 medium, 3 hard; t00, t06 and t12 are the typical
#: easy, medium and hard task (the ones the 3-of-15 row breaks)
RATES: tuple[float, ...] = (0.95, 1.0, 0.97, 0.93, 0.9, 0.98,
                            0.7, 0.75, 0.65, 0.8, 0.6, 0.72,
                            0.35, 0.45, 0.3)
DEPTH = 20  # pooled baseline runs per task
TODAY = GateSettings(power_simulations=0, plan="uniform", sequential_looks=2,
                     sequential_pass_p=0.25)
TWO_LOOKS = GateSettings(power_simulations=0, sequential_looks=2)
PLANNED = GateSettings(power_simulations=0)  # the shipped settings: three looks
SCENARIOS = ("A/A (unchanged)", "3 of 15 → 0 (easy, medium, hard)", "1 of 15 → 0 (random)",
             "every task −20 pts", "mid-rate t06 (0.7) → 0")


def truth(scenario: str, rng: np.random.Generator) -> list[float]:
    """The PR's true pass rates under ``scenario``."""
    rates = list(RATES)
    if scenario.startswith("3 of 15"):
        return [0.0 if i in (0, 6, 12) else r for i, r in enumerate(rates)]
    if scenario.startswith("1 of 15"):
        gone = int(rng.integers(len(rates)))
        return [0.0 if i == gone else r for i, r in enumerate(rates)]
    if scenario.startswith("every task"):
        return [max(r - 0.2, 0.0) for r in rates]
    if scenario.startswith("mid-rate"):
        return [0.0 if i == 6 else r for i, r in enumerate(rates)]
    return rates


def take(pool: Results, runs: Mapping[str, int], looks: list[int],
         plan: RunPlan | None, looks_run: int) -> Results:
    """The PR's file after ``looks_run`` looks: each task's first ``runs[task]`` runs."""
    kept = [r for r in pool.runs if r.replication < runs[r.task]]
    return pool.model_copy(update={
        "runs": kept, "summary": summarize(kept),
        "schedule": Schedule(replications=max(runs.values()), sequential=looks),
        "plan": plan.record(looks_run) if plan is not None else None})


@dataclass(frozen=True)
class Outcome:
    verdict: str
    runs: int  # PR runs spent, all tasks
    tokens: tuple[int, int, int, int]  # input, output, cache write, cache read of those runs


def _spent(f: Results) -> Outcome:
    u = [r.usage for r in f.runs if r.usage is not None]
    return Outcome("", len(f.runs), (sum(x.input_tokens for x in u),
                                     sum(x.output_tokens for x in u),
                                     sum(x.cache_creation_input_tokens for x in u),
                                     sum(x.cache_read_input_tokens for x in u)))


def today(base: Results, pool: Results, settings: GateSettings) -> Outcome:
    """The uniform sequential looks, as `gate ci` ran them before plans."""
    tasks = list(base.suite.tasks)
    first = settings.sequential_first
    f = take(pool, dict.fromkeys(tasks, first), [first], None, 1)
    c = judge(base, f, settings)
    if first_look(c, settings.stop_p(0)) == "continue":
        extra = second_look_runs(c, settings)
        f = take(pool, dict.fromkeys(tasks, first + extra), [first, extra], None, 2)
        c = judge(base, f, settings)
    return _with(c, f)


def planned(base: Results, pool: Results, settings: GateSettings, plan: RunPlan) -> Outcome:
    """The plan's looks as ``run_sequential`` runs them: each judged on all its runs so far
    (``judge`` applies the look's share of the levels from the file's plan), each but the
    last stopping or going on by ``first_look`` at its stop."""
    for look in range(1, plan.looks + 1):
        f = take(pool, plan.through(look), plan.schedule(look - 1)["sequential"], plan, look)
        c = judge(base, f, settings)
        if look == plan.looks or first_look(c, settings.stop_p(look - 1)) != "continue":
            return _with(c, f)
    raise AssertionError("a plan has at least one look")


def _with(c: Comparison, f: Results) -> Outcome:
    s = _spent(f)
    return Outcome(c.verdict, s.runs, s.tokens)


def pool_runs(plan_total: Mapping[str, int], settings: GateSettings) -> list[int]:
    """Runs per task to draw for one PR: enough for both procedures' looks."""
    today_total = settings.sequential_first + settings.sequential_more
    return [max(today_total, plan_total[f"t{i:02d}"]) for i in range(len(RATES))]


@dataclass(frozen=True)
class Job:
    scenario: str
    draws: int
    seed: int
    permutations: int
    stops: tuple[float, ...] | None = None  # the three looks' stops (None: the settings')


PROCEDURES = ("today", "two looks", "three looks")


@dataclass
class Tally:
    blocks: int = 0
    not_pass: int = 0  # blocks + unclear + inconclusive: any exit but 0
    runs: int = 0
    dollars: float = 0.0

    def add(self, o: Outcome, dollars: float) -> None:
        self.blocks += o.verdict == "regression"
        self.not_pass += o.verdict != "pass"
        self.runs += o.runs
        self.dollars += dollars


def dollars(tokens: tuple[int, int, int, int], model: str) -> float:
    """The runs' tokens on gate's price table for ``model`` (5-minute cache writes)."""
    r = price_table().resolve(model).rates
    i, o, w, c = tokens
    return (i * r.input + o * r.output + w * r.cache_write_5m + c * r.cache_read) / 1e6


def run_job(job: Job) -> tuple[Job, dict[str, Tally]]:
    """``job.draws`` PRs of one scenario, each through the three procedures on the same runs."""
    rng = np.random.default_rng(job.seed)
    same = {"permutations": job.permutations}
    settings = {"today": TODAY.model_copy(update=same),
                "two looks": TWO_LOOKS.model_copy(update=same),
                "three looks": PLANNED.model_copy(update={
                    **same, **({"sequential_pass_p": list(job.stops)} if job.stops else {})})}
    model = AgentConfig().model
    tallies = {name: Tally() for name in PROCEDURES}
    for _ in range(job.draws):
        base = synthetic_results(list(RATES), DEPTH, rng)
        tasks = [(t, i.digest) for t, i in base.suite.tasks.items()]
        plans = {name: plan_runs(base, tasks, PlanSettings.of(settings[name], replications=3,
                                                              sequential=True))
                 for name in PROCEDURES[1:]}
        total = plans["three looks"].through(plans["three looks"].looks)
        pool = synthetic_results(truth(job.scenario, rng), pool_runs(total, settings["today"]),
                                 rng)
        outcomes = [("today", today(base, pool, settings["today"])),
                    *((name, planned(base, pool, settings[name], plan))
                      for name, plan in plans.items())]
        for name, outcome in outcomes:
            tallies[name].add(outcome, dollars(outcome.tokens, model))
    return job, tallies


def pct(hits: int, n: int) -> str:
    return f"{100 * hits / n:.1f} %"


def synthetic(args: argparse.Namespace) -> int:
    chunk = max(1, min(50, args.trials // max(1, args.jobs)))
    jobs: list[Job] = []
    for k in range(0, args.trials, chunk):  # every row's chunks in turn: a run cut short
        for i, scenario in enumerate(SCENARIOS):  # still has every row
            jobs.append(Job(scenario, min(chunk, args.trials - k), args.seed + 1000 * i + k,
                            args.permutations, args.stops))
    start = time.perf_counter()
    names = PROCEDURES
    totals = {(s, n): Tally() for s in SCENARIOS for n in names}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for job, tallies in pool.map(run_job, jobs):
            for name, t in tallies.items():
                tot = totals[(job.scenario, name)]
                tot.blocks += t.blocks
                tot.not_pass += t.not_pass
                tot.runs += t.runs
                tot.dollars += t.dollars
                # each chunk's counts as they finish, so a run cut short keeps its figures
                print(json.dumps({"scenario": job.scenario, "procedure": name,
                                  "draws": job.draws, "seed": job.seed, **vars(t)}),
                      file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.perf_counter() - start
    n, tasks = args.trials, len(RATES)
    stops = args.stops or (PLANNED.stop_p(0), PLANNED.stop_p(1))
    print(f"15 tasks (true pass rates {', '.join(f'{r:g}' for r in RATES)}), pooled baseline "
          f"of {DEPTH} runs a task; {n} PRs per row, the three procedures on the same runs; "
          f"default settings but no power statement (alpha 0.01, metric_alpha 0.003, "
          f"{args.permutations} permutations); today: stop at p > {TODAY.stop_p(0):g}; two "
          f"looks: at p > {TWO_LOOKS.stop_p(0):g}; three looks: at p > "
          f"{', then '.join(f'{x:g}' for x in stops)}; seed {args.seed}; {seconds:.0f} s on "
          f"{args.jobs} process(es).\n")
    print("| PR | " + " | ".join(f"{m}: blocks | {m}: blocks + unclear + inconclusive | "
                                 f"{m}: runs/task" for m in names) + " |")
    print("|---|" + "--:|--:|--:|" * len(names))
    for s in SCENARIOS:
        row = [s]
        for name in names:
            t = totals[(s, name)]
            row += [pct(t.blocks, n), pct(t.not_pass, n), f"{t.runs / n / tasks:.2f}"]
        print("| " + " | ".join(row) + " |")
    aa = SCENARIOS[0]
    model = AgentConfig().model
    print(f"\nA harmless PR (A/A) on the price table ({model}, the runs' token counts): "
          + ", ".join(f"{m} ${totals[(aa, m)].dollars / n:.2f}" for m in names) + " per PR.")
    return 0


def _look_runs(cfg: GateConfig, plan: RunPlan, look: int, kept: list[RunResult], seed: int,
               tmp: Path) -> list[RunResult]:
    """Run look ``look`` of ``plan`` on the simulator: one run_suite per (first replication,
    runs) group of tasks; the runs so far plus the look's."""
    groups: dict[tuple[int, int], list[str]] = {}
    for t, p in plan.tasks.items():
        groups.setdefault((p.through(look), p.looks[look]), []).append(t)
    runs = list(kept)
    for i, ((first, n), ids) in enumerate(sorted(groups.items())):
        res = run_suite(RunRequest(config=cfg, output=tmp / f"look{look}-{i}.json",
                                   task_ids=ids, replications=n, first_replication=first,
                                   sim=True, transcripts=False, seed=seed + 97 * i))
        runs += res.runs
    return runs


def shown(c: Comparison) -> str:
    """What a PR's check shows for ``c``, as the report's title says it
    (``gate.report.title_state``): "blocked" (exit 1), "unclear" (only a gating metric past
    its margin that its test could not reliably judge: the verdict field says "inconclusive",
    the exit is 0), "inconclusive" (any other reason), "unjudged" or "pass"."""
    state = title_state(c)
    return "blocked" if state == "regression" else state


@dataclass(frozen=True)
class Look:
    """One look of a simulated PR, as judged."""

    shown: str  # :func:`shown`
    exit_code: int
    runs_per_task: float
    reasons: tuple[str, ...]
    unclear: tuple[str, ...]  # the metrics read "unclear" (the power at the margin, %)
    blind: tuple[str, ...]  # the metrics the design could not block on at all


def look_of(c: Comparison, runs_per_task: float) -> Look:
    r = c.resolution
    return Look(shown(c), c.exit_code, runs_per_task, tuple(c.reasons),
                tuple(f"{m} ({100 * r.power_at_margin.get(m, 0.0):.0f} % power at the margin)"
                      for m in r.unclear) if r is not None else (),
                tuple(r.blind) if r is not None else ())


def _look_text(i: int, k: Look) -> str:
    what = f"look {i + 1} ({k.runs_per_task:.2f} runs/task): {k.shown} (exit {k.exit_code})"
    if k.unclear:
        what += f"; unclear: {', '.join(k.unclear)}"
    if k.blind:
        what += f"; blind: {', '.join(k.blind)}"
    return what + "".join(f"\n      - {r}" for r in k.reasons)


def sim_summary(draws: list[tuple[Look, ...]], first_runs: float) -> list[str]:
    """The smoke's summary: each PR's end by what its check shows (with the exit code), the
    looks and runs, then every look that was not a plain pass, with its reasons."""
    n = len(draws)
    if not n:
        return ["no PRs"]
    ends = [d[-1] for d in draws]
    kinds = ("pass", "unclear", "inconclusive", "blocked")
    counts = []
    for kind in kinds:
        codes = sorted({e.exit_code for e in ends if e.shown == kind})
        if codes:
            exits = "/".join(map(str, codes))
            counts.append(f"{kind} {sum(e.shown == kind for e in ends)} (exit {exits})")
    by_look: dict[int, list[tuple[Look, ...]]] = {}
    for d in draws:
        by_look.setdefault(len(d), []).append(d)
    ended = [f"{len(ds)} {'ended ' if not i else ''}after look {k} "
             f"({sum(d[-1].runs_per_task for d in ds) / len(ds):.2f}"
             f"{' runs a task' if not i else ''})"
             for i, (k, ds) in enumerate(sorted(by_look.items()))]
    lines = [", ".join(counts) + f"; {', '.join(ended)}; "
             f"{sum(e.runs_per_task for e in ends) / n:.2f} runs per task (first look "
             f"{first_runs:.2f})."]
    for i, d in enumerate(draws):
        if all(k.shown == "pass" for k in d):
            continue
        lines.append(f"  PR {i + 1}: ends {d[-1].shown} (exit {d[-1].exit_code})")
        lines += [f"    {_look_text(j, k)}" for j, k in enumerate(d)]
    return lines


def simulated(args: argparse.Namespace) -> int:
    """Harmless PRs of the bundled suite on the simulator against the committed baseline,
    each through the plan's looks: the plan, what each PR's check shows (with the reasons of
    every look that was not a plain pass) and the runs per task."""
    cfg = load_config(REPO / "gate.toml")
    base = load_results(REPO / "baseline.json")
    suite = load_suite(cfg.path(cfg.suite.tasks))
    info = suite_info(suite, cfg.suite.net_raw)
    settings = cfg.gate.model_copy(update={"power_simulations": 0})
    plan = plan_runs(base, [(t.id, t.digest) for t in suite.tasks],
                     PlanSettings.of(settings, replications=cfg.suite.replications,
                                     sequential=True))
    print(f"The plan of the bundled suite from baseline.json ({plan.rule} v{plan.version}):\n")
    print("| task | baseline | runs per look |")
    print("|---|---|--:|")
    for t, p in plan.tasks.items():
        print(f"| {t} | {p.basis} | {' + '.join(map(str, p.looks))} |")
    start = time.perf_counter()
    draws: list[tuple[Look, ...]] = []
    uniform = list(plan.settings.uniform())
    with tempfile.TemporaryDirectory() as d:
        for draw in range(args.trials):
            runs: list[RunResult] = []
            looks: list[Look] = []
            for look in range(plan.looks):
                runs = _look_runs(cfg, plan, look, runs, args.seed + 1000 * draw + look,
                                  Path(d))
                pr = new_results(model=base.model, agent=base.agent, suite=info,
                                 commit=base.commit, runs=runs,
                                 schedule=Schedule(replications=max(plan.through(look + 1)
                                                                    .values()),
                                                   sequential=uniform[:look + 1]),
                                 simulator={"seed": args.seed + draw})
                pr.plan = plan.record(look + 1)
                c = judge(base, pr, settings)
                looks.append(look_of(c, len(runs) / len(plan.tasks)))
                if look + 1 == plan.looks or \
                        first_look(c, settings.stop_p(look)) != "continue":
                    break
            draws.append(tuple(looks))
            print(f"draw {draw + 1}: " + " ".join(
                line.strip() for j, k in enumerate(looks) for line in
                _look_text(j, k).splitlines()), file=sys.stderr, flush=True)
    print(f"\n{len(draws)} harmless PRs on the simulator (seed {args.seed}), "
          f"{time.perf_counter() - start:.0f} s: ", end="")
    print("\n".join(sim_summary(draws, sum(plan.look(0).values()) / len(plan.tasks))))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=None,
                    help="PRs per row (default 1000; with --sim 50)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes (default 2)")
    ap.add_argument("--seed", type=int, default=20261206)
    ap.add_argument("--permutations", type=int, default=9999,
                    help="relabellings per metric test (default 9999, gate's; at least 2667, "
                         "or a metric could not block at metric_alpha/4 in a look's two-sided "
                         "test)")
    ap.add_argument("--stops", type=lambda v: tuple(float(x) for x in v.split(",")),
                    default=None, metavar="S1,S2",
                    help="the three looks' stops (default: [gate]'s sequential_pass_p)")
    ap.add_argument("--sim", action="store_true",
                    help="smoke: harmless PRs of the bundled suite on the simulator")
    args = ap.parse_args(argv)
    if args.sim:
        args.trials = args.trials or 50
        return simulated(args)
    args.trials = args.trials or 1000
    return synthetic(args)


if __name__ == "__main__":
    sys.exit(main())
