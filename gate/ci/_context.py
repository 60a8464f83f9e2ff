"""What every stage of one ``gate ci`` job shares, none of it steering the run: the options as
given, the CI environment's facts, the outputs/annotations sink, the redactor, the job's forge
(``_forge``: the stages see no forge's own types), and the traces of the runs as they land
(the comment's evidence: nothing of the checkout is read once the suite is over).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from gate.ci._forge import CIFacts, Forge, Sink
from gate.ci._options import CIOptions
from gate.core.metrics import METRICS
from gate.core.results import Results, RunResult
from gate.core.traces import Trace, landed_trace, results_traces
from gate.errors import Unmeasurable
from gate.execution.run import RunRequest
from gate.secrets import Redactor
from gate.upstream import Upstream, get_upstream


def no_key(api: Upstream, missing: tuple[str, ...] = ()) -> str:
    """The one line of a CI run without what the upstream ``api`` needs (``missing``, as
    :meth:`Upstream.missing` names it; by default its credential)."""
    if missing in ((), (api.credential_name,)):
        return (f"{api.credential_name} is empty: add it as a repository secret and "
                f"{api.credential_setup}, or set `sim: true` to run against the built-in "
                "simulator")
    return (f'[agent] upstream = "{api.name}" needs {" and ".join(missing)}, and the gate '
            f"step's environment has none: {api.credential_setup}; or set `sim: true` to run "
            "against the built-in simulator")


def trace_key(run: RunResult) -> tuple[object, ...]:
    return (run.arm, run.task, run.condition, run.replication)


@dataclass(frozen=True)
class Context:
    opts: CIOptions
    env: CIFacts
    io: Sink
    redact: Redactor
    forge: Forge
    # each run's trace, read from its transcript as it lands (gate/core/traces.py)
    landed: dict[tuple[object, ...], Trace] = field(default_factory=dict)

    @classmethod
    def make(cls, opts: CIOptions, env: CIFacts | None, io: Sink | None) -> Context:
        """The job's context: the environment (read here when not given), the sink and the
        forge, from the forge's adapter. The one place that names an adapter (GitHub's)."""
        from gate.ci._github import connect, environment

        env = env if env is not None else environment()
        redact = Redactor(env.secrets)
        io, forge = connect(env, io, redact, lambda line: opts.log(redact(line)))
        return cls(opts, env, io, redact, forge)

    def log(self, line: str) -> None:
        self.opts.log(self.redact(line))

    def land(self, run: RunResult) -> None:
        """Every run as it finishes: its trace kept, then the caller's ``on_result``."""
        trace = landed_trace(run, redact=self.redact)
        if trace is not None:
            self.landed[trace_key(run)] = trace
        if self.opts.on_result is not None:
            self.opts.on_result(run)

    def traces(self, results: Results, path: Path) -> list[Trace]:
        """The traces of ``results``' runs: as they landed in this job, else (stored results,
        re-judged or merged: no suite ran here) from the transcripts beside ``path``."""
        if any(trace_key(r) in self.landed for r in results.runs):
            return [self.landed[k] for r in results.runs
                    if (k := trace_key(r)) in self.landed]
        return results_traces(results, path, redact=self.redact)

    def agent_kind(self, req: RunRequest) -> str:
        return req.agent_kind or req.config.agent.kind

    def spends(self, req: RunRequest) -> bool:
        """Whether running ``req`` talks to a model (the API, or the simulator standing in for
        it); the oracle's runs cost nothing."""
        from gate.agents import agent_kind

        return agent_kind(self.agent_kind(req)).uses_model

    def upstream(self, req: RunRequest) -> Upstream:
        """The upstream ``req``'s configuration forwards to (``[agent] upstream``)."""
        return get_upstream(req.config.agent.upstream,
                            where=req.config.where("agent.upstream"))

    def needs_key(self, req: RunRequest) -> bool:
        return self.spends(req) and not getattr(req, "sim", False)

    def missing(self, req: RunRequest) -> tuple[str, ...]:
        """What the upstream ``req`` runs on (its ``[agent] upstream``) needs from the step's
        environment and does not find there, each named (:meth:`Upstream.missing`): only that
        upstream's credential and settings count, never another's; ``()`` for a run that
        spends no model or runs on the simulator (which is never a fall-back)."""
        if not self.needs_key(req):
            return ()
        return self.upstream(req).missing(os.environ)

    def run_request(self, req: RunRequest) -> RunRequest:
        """``req`` checked for what its upstream needs, seeded per CI run under the
        simulator."""
        if missing := self.missing(req):
            raise Unmeasurable(no_key(self.upstream(req), missing))
        if req.sim and req.seed is None and self.env.run_id.isdigit():
            # Each CI run is a fresh sample, as with a real model: repeated refreshes of main
            # must not pool identical copies of one simulated run into the baseline.
            req = dataclasses.replace(req, seed=int(self.env.run_id) % 2**31)
        self.log(f"gate ci: running the suite ({self.agent_kind(req)} agent"
                 + (f", simulator seed {req.seed or 0}" if req.sim else "") + ")")
        return req

    def outputs_for(self, results: Results | None, output: Path) -> dict[str, object]:
        """The run's numbers as step outputs (the suite's runs: a skill condition's runs are
        the skill-effect check's)."""
        from gate.compare import plain_runs

        s = plain_runs(results).summary if results else None
        # a metric's output is the results summary's field of its name (gate/core/metrics.py); a
        # file that does not record it gives ""
        values = {m.output: num(getattr(s, m.output, None) if s else None)
                  for m in METRICS if m.output}
        return {
            **values,
            "passed": s.passed if s else "",
            "total": s.total if s else "",
            "errors": s.errors if s else "",
            "model": results.model if results else "",
            "results_path": str(output.resolve()) if results else "",
        }


def num(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"
