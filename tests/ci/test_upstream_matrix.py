"""Issue 41's "done when", cell by cell: for each upstream (anthropic, gateway, bedrock,
vertex), the builtin agent and Claude Code run a bundled task against the simulator through
``gate run`` (main's baseline) and ``gate ci`` (a PR judged against it), each as a real
``python -m gate`` process; every run is metered token for token (the simulator's ledger is
what the gate billed, and the client's own account says the same: the builtin agent's
transcript, Claude Code's final JSON), the simulator's front checked each request's
credential (Bedrock: the meter's SigV4 signature, by the simulator's own check; Vertex and a
gateway: the bearer token; a refused one fails the run), and both results files say which
upstream they measured. A baseline from another upstream is named in the verdict.

docs/upstreams.md has the table of which test covers which cell."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gate.core.results import load_results
from gate.sim import ledger_totals, read_ledger
from gate.usage import Usage
from tests.helpers.ci import REPO, TOKEN, Project, sh
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.process import gate, user_env
from tests.helpers.usage import FIELDS, builtin_metered_exactly, claude_code_reported

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: a bundled task (its solution starts with a bash-only line; the simulator solves it)
TASK = "fix-slugify-whitespace"
PROJECT, REGION = "gate-matrix-project", "europe-west1"
PROVIDER = {"anthropic": "anthropic", "gateway": "gateway", "bedrock": "aws-bedrock",
            "vertex": "google-vertex"}
#: no cloud or API credential of this machine's reaches the gate: --sim is all it has
ENV = {"ANTHROPIC_API_KEY": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
       "AWS_SESSION_TOKEN": "", "AWS_BEARER_TOKEN_BEDROCK": "",
       "AWS_EC2_METADATA_DISABLED": "true", "GOOGLE_APPLICATION_CREDENTIALS": "",
       "ANTHROPIC_VERTEX_PROJECT_ID": PROJECT, "CLOUD_ML_REGION": REGION}


def claude_code(claude_bin: str) -> str:
    return (f'IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 "{claude_bin}" '
            '-p "$(cat "$GATE_PROMPT_FILE")" --output-format json '
            "--dangerously-skip-permissions")


def write_project(root: Path, upstream: str, command: str | None) -> None:
    """The repository's gate.toml (its builtin agent's files beside it) on ``upstream``, with
    one bundled task; ``command``: Claude Code's command line instead of the builtin agent."""
    text = (ROOT / "gate.toml").read_text()
    text = "".join(ln for ln in text.splitlines(keepends=True) if not ln.startswith("skills"))
    agent = f'[agent]\nupstream = "{upstream}"\n'
    if command is not None:
        text = text.replace('kind = "builtin"', 'kind = "command"', 1)
        agent += f"command = '{command}'\n"
    # one run a task in the PR too (no sequential second look, no plan by pass rate): this
    # checks metering on each upstream, not the statistics
    text = text.replace("[gate]\n", '[gate]\nsequential = false\nplan = "uniform"\n', 1)
    (root / "gate.toml").write_text(text.replace("[agent]\n", agent, 1))
    shutil.copytree(ROOT / "agent", root / "agent")
    shutil.copytree(ROOT / "tasks" / TASK, root / "tasks" / TASK)
    (root / ".gitignore").write_text("results.json\n*.transcripts/\n*.jsonl\ngate-report.*\n")


def measured(path: Path, upstream: str, agent: str) -> None:
    """Every run was judged (none an infra error), metered token for token, on ``upstream``,
    as the results file at ``path`` says (its ledger and transcripts are named relative to the
    folder the gate ran in: the file's)."""
    res = load_results(path)
    record = res.upstream_api
    assert record is not None
    assert (record.upstream, record.provider) == (upstream, PROVIDER[upstream])
    if upstream == "vertex":
        assert record.region == REGION
    assert res.runs and res.summary.errors == 0, [(r.status, r.reason) for r in res.runs]
    with contextlib.chdir(path.parent):
        ledger = res.model_extra["simulator"]["ledger"]  # type: ignore[index]
        # each request the front took passed its credential check (a refused one: a 4xx)
        served = read_ledger(ledger)
        assert served and {e["status"] for e in served} == {200}
        if agent == "builtin":
            builtin_metered_exactly(res.runs, ledger)
            return
        total = ledger_totals(ledger)
        billed = sum((r.billed_usage or r.usage for r in res.runs), Usage())
        assert tuple(getattr(billed, f) for f in FIELDS) == tuple(
            getattr(total, f) for f in FIELDS)
        for run in res.runs:
            claude_code_reported(run)


def change_agent(agent: str) -> Callable[[Path], None]:
    """A PR's agent change that changes no behaviour: measured, never skipped."""
    def change(work: Path) -> None:
        cfg = work / "gate.toml"
        text = cfg.read_text()
        if agent == "builtin":
            new = text.replace("max_tokens = 4096", "max_tokens = 4095", 1)
        else:
            new = text.replace("command = 'IS_SANDBOX=1 ", "command = 'GATE_PR=1 IS_SANDBOX=1 ",
                               1)
        assert new != text
        cfg.write_text(new)
    return change


def on_main(tmp_path: Path, upstream: str, command: str | None) -> tuple[Path, Path]:
    """A repository whose main has the project and a baseline ``gate run --sim`` measured
    (before it is committed, its results are returned for checking): (origin, the seed)."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh(seed, "git", "init", "-q", "-b", "main")
    write_project(seed, upstream, command)
    p = gate("run", "--sim", "-k", "1", "-j", "1", "-o", seed / "baseline.json", cwd=seed,
             base=user_env(**ENV), timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    origin = tmp_path / "origin.git"
    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", str(origin))
    sh(seed, "git", "add", "-A")
    sh(seed, "git", "commit", "-q", "-m", f"the project and its baseline, on {upstream}")
    sh(seed, "git", "remote", "add", "origin", f"file://{origin}")
    sh(seed, "git", "push", "-q", "origin", "main")
    return origin, seed


@pytest.mark.parametrize("agent", ["builtin", "claude-code"])
@pytest.mark.parametrize("upstream", ["anthropic", "gateway", "bedrock", "vertex"])
def test_gate_run_and_gate_ci_on_each_upstream_metered_token_for_token(
        tmp_path: Path, upstream: str, agent: str, request: pytest.FixtureRequest) -> None:
    command = None
    if agent == "claude-code":
        request.applymarker(pytest.mark.claude_code)
        command = claude_code(request.getfixturevalue("claude_bin"))
    origin, seed = on_main(tmp_path, upstream, command)
    measured(seed / "baseline.json", upstream, agent)  # gate run
    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, origin, gh)
        ci = project.pr_branch("agent-change", change_agent(agent))
        run = project.gate_ci(ci, "--sim", "-k", "1", "-j", "1", env=ENV, process=True)
        assert run.code in (0, 3), run.stderr[-3000:]  # one run a side: never a regression
        assert run.outputs["verdict"] != "regression", run.summary
        measured(ci / "results.json", upstream, agent)  # gate ci
        assert "another upstream" not in run.summary.lower()  # the same upstream's baseline
        run.no_secrets(gh)


def test_a_baseline_from_another_upstream_is_named_in_the_verdict(tmp_path: Path) -> None:
    """main measured on the Anthropic API, a PR that only moves the agent to Bedrock: it is
    measured (where the model runs is part of the agent's fingerprint, never "nothing under
    test changed"), the change is said, and `gate ci` names both upstreams in the verdict it
    comments."""
    origin, _ = on_main(tmp_path, "anthropic", None)

    def to_bedrock(work: Path) -> None:
        cfg = work / "gate.toml"
        cfg.write_text(cfg.read_text().replace('upstream = "anthropic"',
                                               'upstream = "bedrock"', 1))

    with FakeGitHub(REPO, token=TOKEN) as gh:
        project = Project(tmp_path, origin, gh)
        ci = project.pr_branch("to-bedrock", to_bedrock)
        run = project.gate_ci(ci, "--sim", "-k", "1", "-j", "1", env=ENV, process=True)
        assert run.code in (0, 3), (run.code, run.stderr[-3000:], run.summary)
        measured(ci / "results.json", "bedrock", "builtin")
        assert "the baseline was measured on upstream anthropic (anthropic" in run.summary, \
            run.summary
        assert "this run on upstream bedrock (aws-bedrock" in run.summary, run.summary
        assert "upstream anthropic → bedrock" in run.summary, run.summary
        (comment,) = [c["body"] for c in gh.comments.get(7, [])]
        assert "this run on upstream bedrock" in comment
