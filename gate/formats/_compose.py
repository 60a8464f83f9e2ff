"""A Harbor task's ``environment/docker-compose.yaml`` that only overrides ``main``, mapped onto
the gate's one container (or refused, with the true reason).

Harbor (harbor-framework/harbor, ``src/harbor/environments/docker/docker.py``:
``DockerEnvironment._docker_compose_paths`` and ``DockerEnvironmentEnvVars``) runs
``docker compose -f docker-compose-base.yaml -f docker-compose-build.yaml (or -prebuilt)
-f environment/docker-compose.yaml``: the task's file is merged over Harbor's own service
``main``, and every ``${VAR}`` in it is filled from the host's environment plus Harbor's
variables (``CPUS``, ``MEMORY`` from ``task.toml``, ``CONTEXT_DIR``, ``MAIN_IMAGE_NAME``,
``PREBUILT_IMAGE_NAME``, ``HOST_*_PATH`` / ``ENV_*_PATH`` of the three log folders), Harbor's
winning. SkillsBench uses such a file to pass variables through, set resource limits and mount
the log folders, all on the one service ``main``: one container, as here.

What maps onto the gate's container: ``environment`` (literal values, and ``${VAR}`` /
bare ``KEY`` pass-through from the host when the value survives the scrub every task
environment gets: :func:`gate.secrets.withheld`, the one credential rule), the resources
(``deploy.resources.limits`` ``cpus`` / ``memory``, ``cpus``, ``mem_limit``; a reservation
is a scheduling hint on one host and changes nothing), Harbor's log volumes
(``${HOST_VERIFIER_LOGS_PATH}:/logs/verifier`` and the agent's and artifacts' folders: the
gate keeps those folders in the container and collects them as for every Harbor task),
``build`` / ``image`` naming the task's own build or image, and Harbor's keep-alive
``command``. Anything else is refused naming the key: a second service (it would never
start), networks, ports, other volumes, a different image.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.errors import BadInput
from gate.formats._harbor_schema import AGENT_LOGS, ARTIFACTS_DIR, VERIFIER_LOGS
from gate.secrets import withheld

COMPOSE_FILE = "docker-compose.yaml"
COMPOSE_LIMIT = 100_000  # bytes
WHERE = f"environment/{COMPOSE_FILE}"
#: Harbor's log folders, by the variable naming the host's side of each
LOG_MOUNTS = {"HOST_VERIFIER_LOGS_PATH": VERIFIER_LOGS, "HOST_AGENT_LOGS_PATH": AGENT_LOGS,
              "HOST_ARTIFACTS_PATH": ARTIFACTS_DIR}
_HOST = "\0host"  # how a Harbor host path reads once filled in (never a real path)
_OWN_BUILD = ("\0context", ".", "./")
_OWN_IMAGE = ("\0main-image", "\0prebuilt-image")
_MAIN_KEYS = {"environment", "deploy", "cpus", "mem_limit", "volumes", "build", "image",
              "command", "network_mode"}
_KEEPALIVE_PREFIXES: tuple[list[str], ...] = ([], ["sh", "-c"], ["bash", "-c"], ["/bin/sh", "-c"],
                                               ["/bin/bash", "-c"])
_VAR = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}$]*))?\}|"
                  r"([A-Za-z_][A-Za-z0-9_]*))")
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


class Refused(Exception):
    """The compose file asks for what one container cannot be (its reason)."""


@dataclass
class ComposeMain:
    """What a one-service override of ``main`` sets on the container."""

    env: dict[str, str] = field(default_factory=dict)
    cpus: float | None = None
    memory_mb: int | None = None
    log_dirs: list[str] = field(default_factory=list)


@dataclass
class _Vars:
    """Where a ``${VAR}`` is filled from: Harbor's own variables, then ``[environment] env``,
    then the host's environment (what it withholds is collected, never used)."""

    own: dict[str, str]
    task_env: Mapping[str, str]
    environ: Mapping[str, str]
    withheld: dict[str, str]
    refused: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        if name in self.own:
            return self.own[name]
        if name in self.task_env:
            return self.task_env[name]
        if name in self.withheld:
            self.refused[name] = self.withheld[name]
            return ""
        return self.environ.get(name)


def compose_path(task_path: Path) -> Path | None:
    p = task_path / "environment" / COMPOSE_FILE
    return p if p.is_file() else None


def read_compose(path: Path) -> dict[str, Any]:
    """The file, parsed: exit 2 naming it when it is no YAML mapping."""
    try:
        raw = path.read_bytes()[:COMPOSE_LIMIT + 1]
        if len(raw) > COMPOSE_LIMIT:
            raise BadInput(f"{WHERE}: larger than {COMPOSE_LIMIT} bytes")
        data = yaml.safe_load(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BadInput(f"{WHERE}: not readable as YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        raise BadInput(f"{WHERE}: no 'services' mapping")
    return data


def map_compose(data: dict[str, Any], *, cpus: float, memory_mb: int,
                task_env: Mapping[str, str], environ: Mapping[str, str]) -> ComposeMain:
    """The override's settings for the one container; :class:`Refused` naming the key (or
    each host variable withheld as a credential) when it asks for more."""
    services = data["services"]
    if list(services) != ["main"]:
        if len(services) != 1:
            raise Refused(f"{WHERE}: {len(services)} services ({', '.join(map(str, services))})"
                          ": the gate runs the task in one container, so any service but "
                          "'main' would never start (a one-service override of 'main' is "
                          "honoured)")
        raise Refused(f"{WHERE}: its one service is {next(iter(services))!r}, not Harbor's "
                      "'main' (the gate honours an override of 'main' alone)")
    for key in data:
        if key not in ("services", "version", "name") and not str(key).startswith("x-"):
            raise Refused(f"{WHERE}: top-level {key!r} does not map onto the gate's one "
                          "container")
    main = services["main"] or {}
    if not isinstance(main, dict):
        raise BadInput(f"{WHERE}: services.main is not a mapping")
    for key in main:
        if key not in _MAIN_KEYS:
            raise Refused(f"{WHERE}: services.main.{key} does not map onto the gate's one "
                          "container (honoured: environment, resource limits, Harbor's log "
                          "volumes, the task's own build or image)")
    own = {"CPUS": f"{cpus:g}", "MEMORY": f"{memory_mb}M", "CONTEXT_DIR": "\0context",
           "MAIN_IMAGE_NAME": "\0main-image", "PREBUILT_IMAGE_NAME": "\0prebuilt-image",
           "ENV_VERIFIER_LOGS_PATH": VERIFIER_LOGS, "ENV_AGENT_LOGS_PATH": AGENT_LOGS,
           "ENV_ARTIFACTS_PATH": ARTIFACTS_DIR,
           **{k: _HOST + v for k, v in LOG_MOUNTS.items()}}
    env = _Vars(own, task_env, environ, withheld(environ))
    filled = _fill(main, env, "services.main")
    out = ComposeMain(env=_environment(filled.get("environment"), env))
    if env.refused:
        names = ", ".join(f"{k} ({why})" for k, why in sorted(env.refused.items()))
        raise Refused(f"{WHERE}: takes host variables the gate withholds from every task: "
                      f"{names}; what it withholds never reaches a container")
    _check_build(filled)
    network = filled.get("network_mode")
    if network not in (None, "bridge"):  # SkillsBench's ${NETWORK_MODE:-bridge}: the default
        raise Refused(f"{WHERE}: services.main.network_mode {str(network)[:40]!r}: the gate "
                      "takes each phase's network from task.toml (Harbor's network_mode), on "
                      "the engine's bridge")
    out.cpus, out.memory_mb = _resources(filled)
    out.log_dirs = _log_volumes(filled.get("volumes"))
    return out


def _fill(value: Any, env: _Vars, where: str) -> Any:
    """Compose's interpolation, everywhere in ``value``."""
    if isinstance(value, dict):
        return {k: _fill(v, env, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return "$"
        name = m.group(2) or m.group(5)
        got, op, arg = env.get(name), m.group(3), m.group(4) or ""
        if op in (":-", "-"):
            return got if got or (got is not None and op == "-") else arg
        if op in (":+", "+"):
            return arg if got or (got is not None and op == "+") else ""
        if op in (":?", "?") and (got is None or (op == ":?" and not got)):
            raise Refused(f"{WHERE}: {where} needs ${{{name}}}, unset here ({arg or 'required'})")
        return got or ""

    if "${" in _VAR.sub("", value):
        raise Refused(f"{WHERE}: {where}: an interpolation the gate does not read "
                      f"({value[:80]!r})")
    return _VAR.sub(one, value)


def _environment(value: Any, env: _Vars) -> dict[str, str]:
    """``environment`` as a list (``KEY=value``, bare ``KEY``: the host's value) or a mapping."""
    if value is None:
        return {}
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        for entry in value:
            key, eq, val = str(entry).partition("=")
            items.append((key, val if eq else None))
    else:
        raise BadInput(f"{WHERE}: services.main.environment is neither a list nor a mapping")
    out: dict[str, str] = {}
    for key, val in items:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
            raise BadInput(f"{WHERE}: services.main.environment: {key[:60]!r} is no variable")
        if val is None:  # pass-through: the host's value, when it has one
            got = env.get(key)
            if got is not None:
                out[key] = got
            continue
        out[key] = str(val).lower() if isinstance(val, bool) else str(val)
    for key, val in out.items():
        if "\0" in val:  # a Harbor host path or image name: nothing inside this container
            raise Refused(f"{WHERE}: services.main.environment {key} takes one of Harbor's "
                          "host paths or image names, which the gate's container has not")
    return out


def _check_build(main: dict[str, Any]) -> None:
    build, image = main.get("build"), main.get("image")
    if build is not None:
        ctx = build if isinstance(build, str) else (build or {}).get("context") \
            if isinstance(build, dict) else None
        extra = set(build) - {"context", "dockerfile"} if isinstance(build, dict) else set()
        dockerfile = build.get("dockerfile", "Dockerfile") if isinstance(build, dict) \
            else "Dockerfile"
        if ctx not in _OWN_BUILD or extra or dockerfile != "Dockerfile":
            raise Refused(f"{WHERE}: services.main.build is not the task's own "
                          "environment/Dockerfile (the gate builds that alone)")
    if image is not None and image not in _OWN_IMAGE:
        raise Refused(f"{WHERE}: services.main.image {str(image)[:80]!r} is not the task's own "
                      "image (environment/Dockerfile or [environment] docker_image)")
    command = main.get("command")
    if command is not None:
        words = command.split() if isinstance(command, str) else [str(w) for w in command]
        if not any(words == [*p, "sleep infinity"] or words == [*p, "sleep", "infinity"]
                   for p in _KEEPALIVE_PREFIXES):
            raise Refused(f"{WHERE}: services.main.command is not Harbor's keep-alive "
                          "(sleep infinity): the gate runs no command of the task's at start")


def _resources(main: dict[str, Any]) -> tuple[float | None, int | None]:
    deploy = main.get("deploy") or {}
    if not isinstance(deploy, dict) or set(deploy) - {"resources"}:
        raise Refused(f"{WHERE}: services.main.deploy: only 'resources' maps onto one container")
    res = deploy.get("resources") or {}
    if not isinstance(res, dict) or set(res) - {"limits", "reservations"}:
        raise Refused(f"{WHERE}: services.main.deploy.resources: only limits (and "
                      "reservations, a scheduling hint) map onto one container")
    limits = res.get("limits") or {}
    if not isinstance(limits, dict) or set(limits) - {"cpus", "memory"}:
        raise Refused(f"{WHERE}: services.main.deploy.resources.limits: only cpus and memory "
                      "map onto one container")
    cpus = limits.get("cpus", main.get("cpus"))
    memory = limits.get("memory", main.get("mem_limit"))
    return (_cpus(cpus) if cpus is not None else None,
            _memory_mb(memory) if memory is not None else None)


def _cpus(value: Any) -> float:
    try:
        n = float(value)
    except (TypeError, ValueError):
        n = math.nan
    if not 0 < n <= 64:
        raise BadInput(f"{WHERE}: services.main cpus {str(value)[:40]!r} is not a number of "
                       "CPUs in (0, 64]")
    return n


def _memory_mb(value: Any) -> int:
    """Compose's memory: bytes, or a number with b / k / m / g (kb, mb, gb)."""
    m = _MEMORY.match(str(value))
    if m is None:
        raise BadInput(f"{WHERE}: services.main memory {str(value)[:40]!r} is not a size "
                       "(such as 4096M or 4G)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    mb = math.ceil(float(m.group(1)) * scale / (1 << 20))
    if not 16 <= mb <= (1 << 20):
        raise BadInput(f"{WHERE}: services.main memory {str(value)[:40]!r}: at least 16M")
    return mb


def _log_volumes(value: Any) -> list[str]:
    """Harbor's log folders (``${HOST_..._PATH}:<its folder>``): kept by the gate as for every
    Harbor task; any other volume is refused, naming it."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadInput(f"{WHERE}: services.main.volumes is not a list")
    dirs: list[str] = []
    for entry in value:
        src, _, rest = str(entry).partition(":") if isinstance(entry, str) else ("", "", "")
        target = rest.split(":")[0].rstrip("/")
        if not src.startswith(_HOST) or src.removeprefix(_HOST) != target:
            shown = str(entry).replace(_HOST, "${HOST_...}")[:100]
            raise Refused(f"{WHERE}: services.main.volumes entry {shown!r}: only Harbor's log "
                          f"folders ({', '.join(LOG_MOUNTS.values())}, from "
                          "${HOST_..._PATH}) map onto the gate's one container")
        dirs.append(target)
    return dirs


def compose_main(task_path: Path, *, cpus: float, memory_mb: int, task_env: Mapping[str, str],
                 environ: Mapping[str, str]) -> ComposeMain | None:
    """The task's override (None: no compose file); :class:`Refused` or :class:`BadInput`."""
    path = compose_path(task_path)
    if path is None:
        return None
    return map_compose(read_compose(path), cpus=cpus, memory_mb=memory_mb, task_env=task_env,
                       environ=environ)
