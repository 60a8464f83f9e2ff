"""Every helper process the gate starts on its own account (git, the simulator's `bash -n`)
gets no credential in its environment: while runs are going, a task can read the environment
of any process of the same user (/proc/<pid>/environ)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from gate import _git
from gate.sim import _model

KEY = "sk-ant-child-env-SECRET-1"
TOKEN = "ghs_childENVsecret12345"


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("GATE_GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    envs: list[dict[str, str]] = []
    real = subprocess.run

    def run(*args: Any, **kw: Any) -> Any:
        assert kw.get("env") is not None, f"{args[0]} inherits the gate's environment"
        envs.append(dict(kw["env"]))
        return real(*args, **kw)

    monkeypatch.setattr(subprocess, "run", run)
    return envs


def _clean(envs: list[dict[str, str]]) -> None:
    assert envs
    for env in envs:
        assert "PATH" in env
        assert KEY not in env.values() and TOKEN not in env.values()


def test_the_simulators_syntax_check_gets_no_secret(spied: list[dict[str, str]]) -> None:
    assert _model._parses("echo ok\n")
    _clean(spied)


def test_reading_the_commit_gets_no_secret(spied: list[dict[str, str]], tmp_path: Path) -> None:
    _git.current_commit(tmp_path)
    _clean(spied)


def _ci_under(shell_line: str, tmp_path: Path,
              extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`gate ci` started by a bash that holds the credentials in its environment (a CI step
    that calls the gate from a script), with ``shell_line`` running it."""
    import os
    import sys

    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "HOME": str(tmp_path), "GITHUB_TOKEN": TOKEN, "ANTHROPIC_API_KEY": KEY,
           **(extra or {})}
    gate = f"{sys.executable} -m gate ci --config {tmp_path / 'missing.toml'}"
    return subprocess.run(["bash", "-c", shell_line.format(gate=gate)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_gate_ci_warns_when_the_shell_that_started_it_holds_a_credential(
        tmp_path: Path) -> None:
    p = _ci_under("{gate}; echo exit=$?", tmp_path)  # a child of the shell: the shell stays
    warning = [line for line in p.stderr.splitlines() if "warning" in line]
    assert warning, p.stderr
    assert "GITHUB_TOKEN" in warning[0] and "ANTHROPIC_API_KEY" in warning[0]
    assert "/proc/" in warning[0] and "exec" in warning[0]
    assert TOKEN not in p.stderr and KEY not in p.stderr and TOKEN not in p.stdout


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_gate_ci_execd_by_the_shell_gives_no_warning(tmp_path: Path) -> None:
    p = _ci_under("exec {gate}", tmp_path)  # as the action does: no shell above holds them
    assert not [line for line in p.stderr.splitlines() if "warning" in line], p.stderr
    assert p.returncode == 2, p.stderr  # (the missing gate.toml)


# ---- issue 30, item 11: one credential rule, by name or value, named in the run's notes -------

#: credentials a runner's environment may hold under names the old name rule let through, or
#: whose name the ancestor warning missed
PLANTED = {
    "DATABASE_URL": "postgres://app:pw-Secret-1@db.internal:5432/app",
    "HTTPS_PROXY": "http://runner:proxy-Secret-2@proxy.internal:3128",
    "CHAT_HOOK": "https://hooks.slack.com/services/T0000/B0000/XXXXsecret3XXXX",
    "INNOCENT": "ghp_" + "a1B2c3D4e5" * 4,
    "GH_PAT": "pat-Secret-4-value",
    "NPM_AUTH": "npm-Secret-5-value",
}
WHY = {"DATABASE_URL": "a URL with a password", "HTTPS_PROXY": "a URL with a password",
       "CHAT_HOOK": "a webhook's URL", "INNOCENT": "a token", "GH_PAT": "its name",
       "NPM_AUTH": "its name"}


def _env_suite(tmp_path: Path, pass_env: str = "") -> tuple[Path, Path]:
    """A task whose solution and verifier write their environment out, and its gate.toml."""
    from tests.helpers.suites import write_task

    suite = tmp_path / "suite"
    write_task(suite, "env", solve=f"env > {tmp_path}/solve.env\necho hi > hello.txt\n",
               verify=f"env > {tmp_path}/verify.env\ngrep -qx hi hello.txt\n")
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "oracle"\n[suite]\ntasks = "{suite}"\nreplications = 1\n'
                   f"{pass_env}")
    return suite, cfg


def _run_env(tmp_path: Path, pass_env: str = "") -> tuple[dict, str]:
    import json

    from tests.helpers.process import gate, user_env

    _, cfg = _env_suite(tmp_path, pass_env)
    out = tmp_path / "r.json"
    p = gate("run", "--config", cfg, "-o", out, base=user_env(**PLANTED))
    assert p.returncode == 0, p.stderr
    seen = (tmp_path / "solve.env").read_text() + (tmp_path / "verify.env").read_text()
    return json.loads(out.read_text())["runs"][0], seen


@pytest.mark.slow
def test_credentials_by_name_or_value_never_reach_a_task_and_are_named_in_its_notes(
        tmp_path: Path) -> None:
    run, seen = _run_env(tmp_path)
    assert run["status"] == "passed", run
    for name, value in PLANTED.items():
        assert value not in seen and f"{name}=" not in seen, name
        assert f"{name} ({WHY[name]})" in run["notes"], run["notes"]
    assert "[suite] pass_env" in run["notes"]
    assert "PATH=" in seen  # the rest of the environment is there


@pytest.mark.slow
def test_a_credential_the_base_lists_in_pass_env_reaches_the_task(tmp_path: Path) -> None:
    run, seen = _run_env(tmp_path, '\npass_env = ["HTTPS_PROXY", "DATABASE_URL"]\n')
    assert f"HTTPS_PROXY={PLANTED['HTTPS_PROXY']}" in seen
    assert f"DATABASE_URL={PLANTED['DATABASE_URL']}" in seen
    assert PLANTED["CHAT_HOOK"] not in seen and PLANTED["INNOCENT"] not in seen
    assert "HTTPS_PROXY" not in run["notes"] and "CHAT_HOOK (a webhook's URL)" in run["notes"]


def test_pass_env_never_passes_the_gates_own(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gate.cli import main

    _, cfg = _env_suite(tmp_path, '\npass_env = ["ANTHROPIC_API_KEY"]\n')
    r = CliRunner().invoke(main, ["validate", "--config", str(cfg)])
    assert r.exit_code == 2, r.output
    assert "gate.toml" in r.stderr and "suite.pass_env" in r.stderr, r.stderr
    assert "never passed to a task" in r.stderr


def test_one_rule_for_the_scrub_and_the_warning() -> None:
    from gate.secrets import credential_reason, withheld

    env = {**PLANTED, "PATH": "/bin", "NO_PROXY": "localhost", "GIT_URL": "ssh://git@host/x",
           "HTTP_PROXY": "http://proxy.internal:3128", "REGION": "eu-west-1-region"}
    assert set(withheld(env)) == set(PLANTED)
    assert {k: credential_reason(k, v) for k, v in PLANTED.items()} == WHY


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_gate_ci_warns_of_every_credential_the_shell_above_holds(tmp_path: Path) -> None:
    """The warning about the calling shell asks the rule the scrub asks: GH_PAT, NPM_AUTH and a
    URL with a password are credentials there too."""
    p = _ci_under("{gate}; echo exit=$?", tmp_path, extra=PLANTED)
    warning = [line for line in p.stderr.splitlines() if "warning" in line]
    assert warning, p.stderr
    for name in ("GH_PAT", "NPM_AUTH", "DATABASE_URL"):
        assert name in p.stderr, (name, p.stderr)
    assert not any(v in p.stderr for v in PLANTED.values())


# ---- issue 38, item 6: the shapes the rule missed never reach an agent, and its notes say so ----

#: credentials of shapes the rule once let through: a private key, a JWT, vendors' tokens, a
#: libpq DSN, a Sentry DSN, a service account's key file, names ending in PASS, DSN or _PWD
SHAPES = {
    "DEPLOY_PEM": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\n"
                  "-----END OPENSSH PRIVATE KEY-----",
    "SESSION_JWT_VALUE": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                         "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "BILLING": "sk_live_51Habcdefghijklmnopqrstuv",
    "UPLOAD": "pypi-AgEIcHlwaS5vcmcCJGUxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgAC",
    "MAILER": "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",
    "VAULT_ADDR_LOGIN": "hvs.CAESIJlWh2Fg6xZbq0nvYkT5eR3LmP1oD",
    "TRIGGER": "glptt-0123456789abcdef0123456789abcdef01234567",
    "SLACK_APP": "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef",
    "PGCONN": "host=db user=app password=pq-Secret-9",
    "ERRORS_URL": "https://0123456789abcdef0123456789abcdef@o123.ingest.sentry.io/456",
    "GCP_SA_JSON": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----'
                   '\\nMIIEvQIBADANBgkq\\n-----END PRIVATE KEY-----\\n"}',
    "DB_PASS": "plain-pass-value-1",
    "SENTRY_DSN": "plain-dsn-value-2",
    "DB_PWD": "plain-pwd-value-3",
}


@pytest.mark.slow
def test_a_command_agent_gets_none_of_the_new_shapes_and_the_notes_name_each(
        tmp_path: Path) -> None:
    import json

    from tests.helpers.process import gate, user_env
    from tests.helpers.suites import write_task

    write_task(tmp_path / "suite", "env")
    dump = tmp_path / "agent.env"
    cfg = tmp_path / "gate.toml"
    cfg.write_text(f'[agent]\nkind = "command"\ncommand = "env > {dump}; echo hi > hello.txt"\n'
                   f'[suite]\ntasks = "{tmp_path / "suite"}"\nreplications = 1\n')
    out = tmp_path / "r.json"
    p = gate("run", "--sim", "--config", cfg, "-o", out,
             base=user_env(**SHAPES, PWD=str(tmp_path), OLDPWD="/tmp"))
    assert p.returncode == 0, p.stderr
    seen, run = dump.read_text(), json.loads(out.read_text())["runs"][0]
    assert run["status"] == "passed", run
    for name, value in SHAPES.items():
        assert f"{name}=" not in seen, name
        assert value.splitlines()[0] not in seen or name == "DEPLOY_PEM", name
        assert f"{name} (" in run["notes"], (name, run["notes"])
    assert "BEGIN OPENSSH PRIVATE KEY" not in seen and "b3BlbnNzaC1rZXkt" not in seen
    assert "PWD=" in seen and "OLDPWD" not in run["notes"]  # the shell's are no credential
    assert not any(v in out.read_text() for v in SHAPES.values())
