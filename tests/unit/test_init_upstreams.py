"""`gate init --upstream <name>`: a team on any registered upstream adopts the gate from one
command. gate.toml names the upstream; the two measuring workflows (the PR check, main's
refresh) give the gate that upstream's credential as the port says (``Upstream.ci``): a
repository secret for the Anthropic API and a gateway, an OIDC exchange for Bedrock and
Vertex, with ``id-token: write`` on those measuring jobs only, never on the report job, and
the exchange skipped on a fork's pull request (which gets no OIDC token). Every repository
secret and variable a workflow reads is one the next steps tell the person to add."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gate.core.config import load_config
from gate.errors import BadInput
from gate.setup.init import init_repository
from gate.upstream import get_upstream, upstream_names

MEASURING = ("agent-gate.yml", "agent-gate-main.yml")
#: the only ``if:`` an OIDC step may have: never on a fork's or Dependabot's pull request
OIDC_IF = ("github.event.pull_request.head.repo.fork != true && github.actor != "
           "'dependabot[bot]'")


def _workflow(root: Path, name: str) -> dict[str, Any]:
    data = yaml.safe_load((root / ".github" / "workflows" / name).read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("upstream", upstream_names())
def test_each_upstream_gets_its_own_credential_steps(tmp_path: Path, upstream: str) -> None:
    result = init_repository(tmp_path, branch="main", upstream=upstream)
    assert result.upstream == upstream
    assert load_config(tmp_path / "gate.toml").agent.upstream == upstream
    api = get_upstream(upstream)
    oidc = bool(api.ci.permissions)
    assert oidc == (upstream in ("bedrock", "vertex"))
    told = result.next_steps()
    texts = ""
    for name in MEASURING:
        text = (tmp_path / ".github" / "workflows" / name).read_text()
        texts += text
        (job,) = _workflow(tmp_path, name)["jobs"].values()
        assert ("id-token" in job["permissions"]) == oidc, (name, job["permissions"])
        if oidc:
            assert job["permissions"]["id-token"] == "write"
        steps = job["steps"]
        gate_at = next(i for i, s in enumerate(steps) if s.get("id") == "gate")
        exchanges = [s for s in steps[:gate_at] if "checkout" not in str(s.get("uses", ""))]
        assert len(exchanges) == int(oidc)
        for step in exchanges:  # skipped where GitHub gives no OIDC token
            assert step["if"] == OIDC_IF and re.search(r"@[0-9a-f]{40}$", step["uses"])
        gate_step = steps[gate_at]
        assert ("anthropic-api-key" in (gate_step.get("with") or {})) == (upstream == "anthropic")
    report = _workflow(tmp_path, "agent-gate-report.yml")
    assert not any("id-token" in (job.get("permissions") or {})
                   for job in report["jobs"].values())
    # every secret and variable the workflows read is one the next steps say to add
    read = set(re.findall(r"\$\{\{\s*(?:secrets|vars)\.([A-Z0-9_]+)\s*\}\}", texts))
    assert read and all(name in told for name in read), (read, told)
    # and no step speaks of another upstream's credential (a Bedrock team has no "key")
    assert ("ANTHROPIC_API_KEY" in told or "the key" in told) == (upstream == "anthropic"), told


def test_the_default_is_the_anthropic_api_as_before(tmp_path: Path) -> None:
    result = init_repository(tmp_path, branch="main")
    assert result.upstream == "anthropic"
    assert "upstream" not in (tmp_path / "gate.toml").read_text().split("[suite]")[0]
    assert "Add the repository secret ANTHROPIC_API_KEY" in result.next_steps()


def test_an_unknown_upstream_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"^--upstream: unknown upstream 'azure' \(known: "):
        init_repository(tmp_path, upstream="azure")
    assert list(tmp_path.iterdir()) == []
    from gate.cli import main

    res = CliRunner().invoke(main, ["init", "--upstream", "vertex", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert 'upstream = "vertex"' in (tmp_path / "gate.toml").read_text()
    assert "AGENT_GATE_GCP_PROVIDER" in res.output
