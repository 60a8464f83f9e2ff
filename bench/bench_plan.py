"""The plan against today's uniform looks: false blocks, power and runs per task, side by side.

Synthetic results with a known truth go through the code `gate ci` runs on a PR:
``gate.compare.plan_runs`` (the plan, from the baseline alone), ``gate.compare.judge`` (the
whole verdict: pass rate, turns, cost, cache-hit rate, resolution, unclear) and
``gate.execution.sequential.first_look`` (stop, block, or look again). Each draw makes one pooled
baseline (20 runs a task) and one PR's runs, and puts the SAME runs through both procedures:

* **today**: every task 2 runs, then 3 more when the first look is not clear (``plan =
  "uniform"``, the files carry no plan, as before issue 40);
* **planned**: each task's runs per look from its own baseline pass rate
  (gate/compare/_plan.py), recorded in the file, judged given the plan.

The suite: 15 tasks whose true pass rates spread from 0.3 to 1.0 (6 near 0.95, 6 near 0.7,
3 near 0.35: :data:`RATES`); turns, cost and cache hits with the per-run noise of
``gate.compare._synthetic``. Rows: an unchanged agent (A/A), three tasks collapsing (one easy,
one medium, one hard), one task collapsing (a random one each draw), every task −20 points,
the mid-rate task t06 (0.7) collapsing. Columns: blocks (exit 1), blocks + unclear +
inconclusive (any exit but 0), and runs per task; then what a harmless PR costs in dollars on
gate's price table for the default model, from the runs' token counts.

    python bench/bench_plan.py [--trials N] [--jobs J] [--seed S] [--permutations P]
        [--pass-p P] [--three-looks S1,S2]
    python bench/bench_plan.py --sim [--trials N]   # smoke: the bundled suite on the simulator

``--three-looks S1,S2`` puts the same runs through a third procedure, not in the product yet:
the plan's second look split in two (:data:`THREE`: 2 + 2 + 3 above half, 1 + 1 + 1 below),
judged by ``gate.compare.compare`` (what ``judge`` runs for a sequential file) at α/4, α/4 and
α/2 and the metrics' levels alike, the first look stopping by ``first_look`` at S1 and the
second at S2 (docs/statistics.md §5a: bench/bench_plan_looks.py measured it on the pass-rate
tests alone).

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

from gate.compare import Comparison, PlanSettings, RunPlan, compare, judge, plain_runs, plan_runs
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
TODAY = GateSettings(power_simulations=0, plan="uniform", sequential_pass_p=0.25)
PLANNED = GateSettings(power_simulations=0)
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
    if first_look(c, settings.sequential_pass_p) == "continue":
        extra = second_look_runs(c, settings)
        f = take(pool, dict.fromkeys(tasks, first + extra), [first, extra], None, 2)
        c = judge(base, f, settings)
    return _with(c, f)


def planned(base: Results, pool: Results, settings: GateSettings, plan: RunPlan) -> Outcome:
    """The plan's looks: look 0's runs, judged; look 1's when the first is not clear."""
    uniform = list(plan.settings.uniform())
    f = take(pool, plan.through(1), uniform[:1], plan, 1)
    c = judge(base, f, settings)
    if first_look(c, settings.sequential_pass_p) == "continue":
        f = take(pool, plan.through(2), uniform, plan, 2)
        c = judge(base, f, settings)
    return _with(c, f)


#: the three-look design: each band's shipped looks (first, second) → three looks, and each
#: look's share of the levels
THREE: dict[tuple[int, ...], tuple[int, int, int]] = {
    (2, 5): (2, 2, 3), (1, 2): (1, 1, 1), (1, 1): (1, 0, 1), (2, 3): (2, 1, 2)}
THREE_SHARES = (0.25, 0.25, 0.5)


def three_looks(base: Results, pool: Results, settings: GateSettings, plan: RunPlan,
                stops: tuple[float, float]) -> Outcome:
    """The plan's runs in three looks (:data:`THREE`), each judged on all its runs so far at
    its share of α and metric_alpha, given the plan; each but the last stops or goes on by
    ``first_look`` at its stop."""
    looks = {t: THREE[p.looks] for t, p in plan.tasks.items()}
    b_plain, allowed = plain_runs(base), plan.allowed()
    runs = dict.fromkeys(looks, 0)
    for k, share in enumerate(THREE_SHARES):
        runs = {t: n + looks[t][k] for t, n in runs.items()}
        f = take(pool, runs, [max(looks[t][j] for t in looks) for j in range(k + 1)], None,
                 k + 1)
        level = settings.model_copy(update={"alpha": settings.alpha * share,
                                            "metric_alpha": settings.metric_alpha * share})
        c = compare(b_plain, plain_runs(f), level, allowed=allowed)
        if k == len(THREE_SHARES) - 1 or first_look(c, stops[k]) != "continue":
            return _with(c, f)
    raise AssertionError("unreachable")


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
    pass_p: float  # the planned procedure's stop threshold (sequential_pass_p)
    three: tuple[float, float] | None = None  # the three-look procedure's stops (None: off)


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
    """``job.draws`` PRs of one scenario, each through both procedures on the same runs."""
    rng = np.random.default_rng(job.seed)
    planned_settings = PLANNED.model_copy(update={"permutations": job.permutations,
                                                  "sequential_pass_p": job.pass_p})
    today_settings = TODAY.model_copy(update={"permutations": job.permutations})
    model = AgentConfig().model
    tallies = {"today": Tally(), "planned": Tally(),
               **({"three looks": Tally()} if job.three else {})}
    for _ in range(job.draws):
        base = synthetic_results(list(RATES), DEPTH, rng)
        plan = plan_runs(base, [(t, i.digest) for t, i in base.suite.tasks.items()],
                         PlanSettings.of(planned_settings, replications=3, sequential=True))
        pool = synthetic_results(truth(job.scenario, rng),
                                 pool_runs(plan.through(2), today_settings), rng)
        outcomes = [("today", today(base, pool, today_settings)),
                    ("planned", planned(base, pool, planned_settings, plan))]
        if job.three:
            outcomes.append(("three looks", three_looks(base, pool, planned_settings, plan,
                                                        job.three)))
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
                            args.permutations, args.pass_p, args.three_looks))
    start = time.perf_counter()
    names = ("today", "planned", *(("three looks",) if args.three_looks else ()))
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
    print(f"15 tasks (true pass rates {', '.join(f'{r:g}' for r in RATES)}), pooled baseline "
          f"of {DEPTH} runs a task; {n} PRs per row, both procedures on the same runs; "
          f"default settings but no power statement (alpha 0.01, metric_alpha 0.003, "
          f"{args.permutations} permutations); planned: stop at p > "
          f"{args.pass_p:g}, "
          f"today: at p > {TODAY.sequential_pass_p:g}; seed {args.seed}; {seconds:.0f} s on "
          f"{args.jobs} process(es).\n")
    if args.three_looks:
        print(f"Three looks: {THREE}, at {THREE_SHARES} of the levels, stopping at p > "
              f"{args.three_looks[0]:g}, then {args.three_looks[1]:g}.\n")
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
    once = [d for d in draws if len(d) == 1]
    twice = [d for d in draws if len(d) > 1]

    def mean_runs(ds: list[tuple[Look, ...]], unit: str = "") -> str:
        return f" ({sum(d[-1].runs_per_task for d in ds) / len(ds):.2f}{unit})" if ds else ""

    lines = [", ".join(counts) + f"; {len(once)} stopped after the first look"
             f"{mean_runs(once, ' runs a task')}, {len(twice)} looked again{mean_runs(twice)}; "
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
                        first_look(c, settings.sequential_pass_p) != "continue":
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
    ap.add_argument("--pass-p", type=float, default=PLANNED.sequential_pass_p,
                    help="the planned procedure's stop threshold (default: [gate]'s "
                         "sequential_pass_p)")
    ap.add_argument("--permutations", type=int, default=9999,
                    help="relabellings per metric test (default 9999, gate's; at least 1334, "
                         "or a metric could not block at metric_alpha/4 in a look)")
    ap.add_argument("--three-looks", type=lambda v: tuple(float(x) for x in v.split(",")),
                    default=None, metavar="S1,S2",
                    help="also the three-look procedure, stopping at S1 then S2")
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
