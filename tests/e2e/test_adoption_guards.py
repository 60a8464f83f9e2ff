"""Guards a new user meets adopting the gate, through the real CLI: a baseline of another
suite is never silently replaced (``gate baseline --other-suite``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.process import gate as run_gate
from tests.helpers.process import user_env

REPO = Path(__file__).resolve().parents[2]


def gate(cwd: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_gate(*args, cwd=cwd, base=user_env())


@pytest.mark.slow
def test_baseline_onto_another_suites_baseline_is_refused_naming_both(tmp_path: Path) -> None:
    """The repository's own baseline (its bundled suite) and a run of `gate init`'s scaffold:
    no task in common. Refused, exit 2, naming both suites; --other-suite replaces it."""
    assert gate(tmp_path, "init", ".").returncode == 0
    p = gate(tmp_path, "run", "--sim", "--agent", "oracle", "-k", "1", "-o", "r.json")
    assert p.returncode == 0, p.stderr
    bundled = tmp_path / "bundled-baseline.json"
    shutil.copyfile(REPO / "baseline.json", bundled)
    before = bundled.read_text()
    old = json.loads(before)["suite"]
    new = json.loads((tmp_path / "r.json").read_text())["suite"]

    p = gate(tmp_path, "baseline", "r.json", "--baseline", bundled)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    n = len(old["tasks"])
    assert lines[0] == (
        f"gate: error: {bundled}: the baseline of another suite, suite {old['digest'][:19]} "
        f"({n} tasks: {', '.join(sorted(old['tasks'])[:3])}, …); r.json ran suite "
        f"{new['digest'][:19]} (1 task: example-count-words), no task in common "
        "(--other-suite replaces it; --baseline FILE keeps this suite's own)"), lines[0]
    assert bundled.read_text() == before  # untouched

    p = gate(tmp_path, "baseline", "r.json", "--baseline", bundled, "--other-suite")
    assert p.returncode == 0, p.stderr
    assert f"replaced the baseline of suite {old['digest'][:19]} ({n} tasks: " in p.stdout
    assert "new baseline: 1 run over 1 task" in p.stdout, p.stdout
    assert set(json.loads(bundled.read_text())["suite"]["tasks"]) == {"example-count-words"}

    # the same suite, run again: pooled as ever, no flag needed
    p = gate(tmp_path, "run", "--sim", "--agent", "oracle", "-k", "1", "-o", "r2.json")
    assert p.returncode == 0, p.stderr
    p = gate(tmp_path, "baseline", "r2.json", "--baseline", bundled)
    assert p.returncode == 0 and "pooled 1 run; now 2 runs over 1 task" in p.stdout, \
        p.stdout + p.stderr


@pytest.mark.slow
def test_init_with_a_moving_action_ref_warns_and_never_calls_it_pinned(tmp_path: Path) -> None:
    """`--action OWNER/REPO@v1` names a tag or branch: init warns (stderr), its next steps
    say it moves, and no workflow calls the gate's own `uses:` pinned. A commit SHA is."""
    moving = tmp_path / "moving"
    moving.mkdir()
    p = gate(moving, "init", "--action", "my-org/agent-gate@v1", ".")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [
        "gate: warning: --action my-org/agent-gate@v1: 'v1' is a tag or branch, not a commit "
        "SHA: the workflows run whatever it points to when they run; pin it: --action "
        "my-org/agent-gate@<commit SHA>"], p.stderr
    step = p.stdout[p.stdout.index("  5. "):p.stdout.index("  6. ")]
    assert "pinned" not in step, step
    assert step.startswith("  5. The workflows' `uses: my-org/agent-gate@v1` names a moving "
                           "ref:\n     'v1' is a tag or branch, not a commit SHA,\n"), step
    for wf in ("agent-gate.yml", "agent-gate-main.yml", "agent-gate-report.yml"):
        text = (moving / ".github" / "workflows" / wf).read_text()
        uses = [ln.strip() for ln in text.splitlines() if "my-org/agent-gate" in ln]
        assert uses == ["uses: my-org/agent-gate@v1  # a moving ref (a tag or branch): "
                        "replace it with a commit SHA"], (wf, uses)
        assert "Actions are pinned by commit SHA" not in text, wf
        assert "# agent-gate's own `uses:` names a moving ref (a tag or branch)" in text, wf

    sha = "0123456789abcdef0123456789abcdef01234567"
    pinned = tmp_path / "pinned"
    pinned.mkdir()
    p = gate(pinned, "init", "--action", f"my-org/agent-gate@{sha}", ".")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert f"  5. The workflows' `uses:` is pinned at a commit SHA (my-org/agent-gate@{sha})" \
        in p.stdout, p.stdout
    text = (pinned / ".github" / "workflows" / "agent-gate.yml").read_text()
    assert f"uses: my-org/agent-gate@{sha}\n" in text
    assert "# Actions are pinned by commit SHA; .github/dependabot.yml keeps the pins current." \
        in text


@pytest.mark.slow
def test_an_install_the_agent_kind_ignores_is_exit_2_but_not_for_the_oracle(
        tmp_path: Path) -> None:
    """`[agent] install` on the builtin agent (only a command agent is installed into each
    task's image): `gate run` is exit 2 naming the key; `--agent oracle` and `gate validate`,
    which run the suite's own scripts, run as ever."""
    assert gate(tmp_path, "init", ".").returncode == 0
    cfg = tmp_path / "gate.toml"
    cfg.write_text(cfg.read_text().replace("[agent]\n", '[agent]\ninstall = "agent/install.sh"\n',
                                           1))
    (tmp_path / "agent" / "install.sh").write_text("#!/bin/sh\npip install my-agent\n")

    p = gate(tmp_path, "run", "--sim", "-k", "1", "-o", "r.json")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        f"gate: error: {cfg}: agent.install: the builtin agent ignores it (only kind = "
        "\"command\" installs into each task's image): remove it, or set kind = \"command\""], \
        p.stderr
    assert not (tmp_path / "r.json").exists()

    p = gate(tmp_path, "run", "--sim", "--agent", "oracle", "-k", "1", "-o", "o.json")
    assert p.returncode == 0, p.stderr
    p = gate(tmp_path, "validate")
    assert p.returncode == 0 and "1 sound, 0 broken" in p.stdout, p.stdout + p.stderr
