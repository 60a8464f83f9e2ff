"""mini-swe-agent for the tests that run it as a command agent: installed once by the
documented script (docs/mini-swe-agent/install.sh) into a cached prefix on the host.

``$GATE_MINI_PREFIX`` names an existing install (``.ci/run`` makes one); otherwise the prefix is
``~/.cache/agent-gate-tests/mini-swe-agent-<digest of install.sh>`` (``$XDG_CACHE_HOME``
honoured), built when missing under a file lock (one build for every xdist worker), so the
package index is asked once per version of the script, not once per test run. A bumped
``VERSION`` in the script is a new digest, a new prefix."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "docs" / "mini-swe-agent" / "install.sh"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agent-gate-tests"


def installed() -> tuple[Path | None, str]:
    """(the ``mini-gate`` wrapper, "") once installed, or (None, why not)."""
    named = os.environ.get("GATE_MINI_PREFIX")
    if named:
        wrapper = Path(named) / "bin" / "mini-gate"
        return (wrapper, "") if wrapper.is_file() else (None, f"no {wrapper}")
    digest = hashlib.sha256(INSTALL.read_bytes()).hexdigest()[:12]
    root = _cache_root()
    root.mkdir(parents=True, exist_ok=True)
    prefix = root / f"mini-swe-agent-{digest}"
    wrapper = prefix / "bin" / "mini-gate"
    with (root / "mini-swe-agent.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker's install of the same: wait for it
        if wrapper.is_file():
            return wrapper, ""
        print(f"tests: installing mini-swe-agent into {prefix} with {INSTALL.name} (once)",
              file=sys.__stderr__, flush=True)
        shutil.rmtree(prefix, ignore_errors=True)  # a half-made one
        p = subprocess.run(["sh", str(INSTALL)], env={**os.environ, "PREFIX": str(prefix)},
                           capture_output=True, text=True, timeout=900, check=False)
        if p.returncode != 0 or not wrapper.is_file():
            shutil.rmtree(prefix, ignore_errors=True)
            tail = (p.stderr.strip() or p.stdout.strip() or "no output").splitlines()[-1]
            return None, f"{INSTALL.name} failed (exit {p.returncode}): {tail}"
    return wrapper, ""


def reported(run: dict[str, object]) -> dict[str, object]:
    """The summary line mini-gate prints last: what mini-swe-agent's trajectory recorded."""
    events = [json.loads(line) for line in Path(str(run["transcript"])).read_text().splitlines()]
    stdout = next(e for e in events if e["type"] == "command")["stdout"]
    said: dict[str, object] = json.loads(stdout.strip().splitlines()[-1])
    return said


def metered_exactly(run: dict[str, object]) -> dict[str, object]:
    """A run of ``mini-gate`` from a results file: its episode ended the way mini-swe-agent
    ends one (its submit command), and what its trajectory says each answer used is what the
    meter billed, token for token (litellm's ``prompt_tokens`` is the whole input), in as
    many model calls as the run's turns. Returns the summary line."""
    said = reported(run)
    task = run["task"]
    assert said["exit_status"] == "Submitted", (task, said)
    u = said["usage"]
    billed = run.get("billed_usage") or run["usage"]
    assert isinstance(u, dict) and isinstance(billed, dict)
    assert (billed["input_tokens"] + billed["cache_creation_input_tokens"]
            + billed["cache_read_input_tokens"], billed["output_tokens"],
            billed["cache_creation_input_tokens"], billed["cache_read_input_tokens"]) == (
        u["prompt_tokens"], u["completion_tokens"], u["cache_creation_input_tokens"],
        u["cache_read_input_tokens"]), task
    assert u["prompt_tokens"] > 0 and u["completion_tokens"] > 0, task
    assert run["turns"] == said["api_calls"], task
    return said


def pip_egress() -> str:
    """Shell lines that give an install script inside a container the package index this
    host's pip uses, as pip is configured here (``pip config list``: its index and extra
    indexes over http(s), the CA file it trusts) and the proxy variables of this environment:
    the CA's text is written into the container (``PIP_CERT``), so an image without this
    host's TLS-inspecting proxy's CA still reaches the index. Nothing is named here: without
    a configured index, pip's own default stands."""
    p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                       text=True, check=False)
    conf: dict[str, str] = {}
    for line in p.stdout.splitlines():
        key, _, value = line.partition("=")
        conf[key.rsplit(".", 1)[-1]] = value.strip().strip("'\"")
    lines = []
    index = os.environ.get("PIP_INDEX_URL") or conf.get("index-url", "")
    if index.startswith(("http://", "https://")):
        lines.append(f"export PIP_INDEX_URL='{index}'")
    extra = [u for u in (os.environ.get("PIP_EXTRA_INDEX_URL")
                         or conf.get("extra-index-url", "")).split()
             if u.startswith(("http://", "https://"))]  # a file:// index is this host's only
    if extra:
        lines.append(f"export PIP_EXTRA_INDEX_URL='{' '.join(extra)}'")
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy"):
        if os.environ.get(name):
            lines.append(f"export {name}='{os.environ[name]}'")
    cert = os.environ.get("PIP_CERT") or conf.get("cert", "")
    if cert and Path(cert).is_file():
        lines += ["mkdir -p /usr/local/share/gate-test",
                  f"cat > /usr/local/share/gate-test/pip-ca.crt <<'CA'\n"
                  f"{Path(cert).read_text().strip()}\nCA",
                  "export PIP_CERT=/usr/local/share/gate-test/pip-ca.crt"]
    return "".join(f"{line}\n" for line in lines)
