"""The sandbox and agent-kind contracts: registered by name, chosen by configuration, and the
base classes (not each backend) hold cancellation, the clean environment and teardown."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.agents import agent_kind, agent_kind_names
from gate.cli import main
from gate.core.tasks import Task
from gate.sandbox import (
    ExecResult,
    LocalSandbox,
    LocalSandboxProvider,
    SandboxError,
    SandboxOptions,
    backend_names,
    register_backend,
)
from gate.sandbox._base import _BACKENDS


class RecordingSandbox(LocalSandbox):
    """A backend that only implements ``_exec``: it records what the base class hands it."""

    calls: list[dict[str, str]]

    def _exec(self, command: str, *, env: dict[str, str], timeout: float, stdin: str | None,
              task_visible: bool) -> ExecResult:
        self.calls.append({"command": command, "task_visible": str(task_visible), **env})
        return super()._exec(command, env=env, timeout=timeout, stdin=stdin,
                             task_visible=task_visible)


class RecordingProvider(LocalSandboxProvider):
    name = "recording"
    made: list[RecordingSandbox] = []  # noqa: RUF012 (one test's record)

    def _create(self, task: Task, run_name: str) -> RecordingSandbox:
        base = super()._create(task, run_name)
        sb = RecordingSandbox(base.root, task, keep=self.keep)
        sb.calls = []
        RecordingProvider.made.append(sb)
        return sb


@pytest.fixture
def recording_backend():
    register_backend("recording", lambda options: RecordingProvider(options=options))
    RecordingProvider.made.clear()
    yield RecordingProvider
    _BACKENDS.pop("recording", None)


def test_a_registered_backend_is_chosen_by_gate_toml_and_gets_scrubbed_commands(
        recording_backend, make_task, suite_dir: Path, tmp_path: Path,
        secret_env: dict[str, str]) -> None:
    make_task("t", setup="echo set > set.txt\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "oracle"\n[suite]\ntasks = "{suite_dir}"\n'
                   'sandbox = "recording"\n')
    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "-k", "1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["runs"][0]["status"] == "passed"
    (sb,) = recording_backend.made
    commands = [c["command"] for c in sb.calls]
    assert [c.rsplit("/", 1)[-1] for c in commands] == ["setup.sh", "solve.sh", "verify.sh"]
    for call in sb.calls:  # the backend never saw a credential, by name or by value
        assert not set(secret_env) & set(call), call
        assert not set(secret_env.values()) & set(call.values()), call
        assert call["TASK_DIR"] == sb.task_dir and call["task_visible"] == "True"
    assert sb._closed and not sb.root.exists()  # torn down by the base class


def test_the_base_class_refuses_commands_once_cancelled_or_closed(
        recording_backend, make_task, suite_dir: Path, tmp_path: Path) -> None:
    from gate.core.tasks import load_task

    cancel = threading.Event()
    provider = RecordingProvider(options=SandboxOptions(cancel=cancel, base_dir=tmp_path / "w"))
    sb = provider.create(load_task(make_task("t")), "t-r0")
    assert isinstance(sb, RecordingSandbox) and sb.cancel is cancel
    assert sb.exec("true", timeout=10).returncode == 0
    tool = sb.calls[-1]
    assert tool["task_visible"] == "False" and "TASK_DIR" not in tool  # agent commands
    cancel.set()
    for call in (lambda: sb.exec("true", timeout=10), lambda: sb.run_script("verify.sh",
                                                                            timeout=10),
                 lambda: sb.read_file("x"), lambda: sb.write_file("x", "y")):
        with pytest.raises(SandboxError, match="cancelled"):
            call()
    assert len(sb.calls) == 1  # the backend was never asked
    sb.close()
    sb.close()  # twice is fine
    cancel.clear()
    with pytest.raises(SandboxError, match="closed"):
        sb.exec("true", timeout=10)


def test_unknown_backend_and_agent_kind_are_exit_2_naming_the_field(tmp_path: Path) -> None:
    assert {"local", "docker"} <= set(backend_names())
    assert agent_kind_names() == ["builtin", "command", "oracle"]
    assert agent_kind("oracle").uses_model is False and agent_kind("command").in_sandbox
    for body, field in (('[suite]\nsandbox = "vm"\n', "suite.sandbox"),
                        ('[agent]\nkind = "robot"\n', "agent.kind")):
        cfg = tmp_path / "gate.toml"
        cfg.write_text(body)
        res = CliRunner().invoke(main, ["run", "--config", str(cfg), "-o",
                                        str(tmp_path / "r.json")])
        assert res.exit_code == 2, res.output
        assert field in res.output and "unknown" in res.output, res.output


def test_the_docker_sandbox_without_an_engine_is_exit_2_saying_so(
        make_task, suite_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    make_task("t")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "oracle"\n[suite]\ntasks = "{suite_dir}"\n'
                   'sandbox = "docker"\nimage = "any:1"\n')
    res = CliRunner().invoke(main, ["run", "--config", str(cfg), "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 2, res.output
    assert "[suite].sandbox = 'docker': no Docker engine reachable" in res.output, res.output
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(("pull", "registry", "want"), [
    (None, False, False),  # off the runners no registry is known to be reachable: never pull
    (None, True, True),    # on GitHub's runners (the caller knows): pull a missing image
    (False, True, False),  # [suite].pull as set wins either way
    (True, False, True),
])
def test_suite_pull_defaults_to_where_a_registry_is_reachable(
        pull: bool | None, registry: bool, want: bool) -> None:
    from gate.core.config import SuiteConfig
    from gate.sandbox import suite_options

    assert suite_options(SuiteConfig(pull=pull), registry=registry).pull is want
