"""Harbor-format tasks (Harbor / Terminal-Bench, SkillsBench), loaded unchanged.

A Harbor task directory holds ``instruction.md`` (the prompt), ``task.toml``,
``environment/Dockerfile``, ``solution/solve.sh`` (the oracle) and ``tests/test.sh`` (the
verifier), which writes its reward to ``/logs/verifier/reward.txt`` (a number) or
``reward.json`` (``{"reward": x, ...}``). The task passes when its reward is 1.

Harbor's ``task.toml`` keeps Harbor's semantics: timeouts (``[agent]`` / ``[verifier]``
``timeout_sec``), resources (``[environment]`` ``cpus``, ``memory_mb``, ``storage_mb``,
``build_timeout_sec``), ``docker_image``, users, and the network policy per phase
(``network_mode`` = public / no-network / allowlist with ``allowed_hosts`` in ``[environment]``,
``[agent]`` and ``[verifier]`` overrides; the older ``allow_internet``). Harbor's default is a
public network. A key the gate does not honour is *listed* (:attr:`HarborTask.unhonoured`),
never silently dropped; a value it cannot honour safely (GPUs, an allowlist it cannot enforce,
host variables templated into the environment) makes the task refused, with the reason.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gate._files import describe_validation_error, printable
from gate.errors import BadInput

NetworkMode = Literal["public", "no-network", "allowlist"]

#: Where things are inside a Harbor container (Harbor's own paths).
TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
LOGS_DIR = "/logs"
AGENT_LOGS = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"
REWARD_TXT = "/logs/verifier/reward.txt"
REWARD_JSON = "/logs/verifier/reward.json"

DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_BUILD_TIMEOUT = 600.0


class _Section(BaseModel):
    # extra keys are kept (and listed as not honoured), never an error: Harbor's schema grows
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class _Phase(_Section):
    timeout_sec: float | None = Field(default=None, gt=0)
    user: str | int | None = None
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _allowlist(self) -> _Phase:
        if self.allowed_hosts and self.network_mode is None:
            self.network_mode = "allowlist"
        if self.allowed_hosts and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid with network_mode = 'allowlist'")
        return self


class HarborEnvironment(_Section):
    build_timeout_sec: float = Field(default=DEFAULT_BUILD_TIMEOUT, gt=0)
    docker_image: str | None = Field(default=None, min_length=1, max_length=256)
    cpus: float = Field(default=1, gt=0, le=64)
    memory_mb: int = Field(default=2048, ge=16)
    storage_mb: int | None = Field(default=None, ge=1)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _allowlist(self) -> HarborEnvironment:
        if self.allowed_hosts and self.network_mode is None:
            self.network_mode = "allowlist"
        if self.allowed_hosts and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid with network_mode = 'allowlist'")
        return self

    def baseline(self) -> NetworkMode:
        if self.network_mode is not None:
            return self.network_mode
        return "public" if self.allow_internet else "no-network"


class HarborConfig(_Section):
    version: str | None = None
    schema_version: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: _Phase = Field(default_factory=_Phase)
    agent: _Phase = Field(default_factory=_Phase)
    environment: HarborEnvironment = Field(default_factory=HarborEnvironment)
    solution: _Phase = Field(default_factory=_Phase)
    task: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None


#: Harbor keys the gate reads but does not act on (information only).
_INFORMATIONAL = {"version", "schema_version", "metadata", "task", "source"}
#: Keys of a phase that the gate honours, per section.
_HONOURED = {
    "agent": {"timeout_sec", "user", "network_mode", "allowed_hosts"},
    "verifier": {"timeout_sec", "user", "network_mode", "allowed_hosts", "env"},
    "solution": {"env"},
    "environment": {"build_timeout_sec", "docker_image", "cpus", "memory_mb", "gpus",
                    "allow_internet", "network_mode", "allowed_hosts", "env"},
}


class HarborTask:
    """A Harbor ``task.toml``, with what the gate honours, lists, and refuses."""

    def __init__(self, config: HarborConfig, raw: dict[str, Any]) -> None:
        self.config = config
        self.unhonoured = _unhonoured(raw)

    @property
    def agent_network(self) -> NetworkMode:
        return self.config.agent.network_mode or self.config.environment.baseline()

    @property
    def verifier_network(self) -> NetworkMode:
        return self.config.verifier.network_mode or self.config.environment.baseline()

    @property
    def difficulty(self) -> str | None:
        d = self.config.metadata.get("difficulty")
        return d if isinstance(d, str) and d in {"easy", "medium", "hard"} else None

    def refusal(self) -> str | None:
        """Why the gate cannot run this task as Harbor would (``None``: it can)."""
        cfg = self.config
        if cfg.environment.gpus > 0:
            return f"task.toml: [environment] gpus = {cfg.environment.gpus}: no GPU here"
        for phase, mode in (("agent", self.agent_network), ("verifier", self.verifier_network)):
            if mode == "allowlist":
                return (f"task.toml: the {phase} phase's network_mode is 'allowlist', which the "
                        "docker sandbox cannot enforce yet (it never widens it to public)")
        for section, env in (("environment", cfg.environment.env),
                             ("verifier", cfg.verifier.env), ("solution", cfg.solution.env)):
            for key, value in env.items():
                if "${" in value:
                    return (f"task.toml: [{section}] env {printable(key)}: host variables "
                            "(${...}) are never passed into a sandbox")
        return None

    def env(self, phase: Literal["agent", "verifier", "solution"]) -> dict[str, str]:
        """The task's literal variables for a phase: ``[environment].env`` then the phase's."""
        own = {"agent": {}, "verifier": self.config.verifier.env,
               "solution": self.config.solution.env}[phase]
        return {**self.config.environment.env, **own}


def _unhonoured(raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in raw.items():
        if key in _INFORMATIONAL:
            continue
        honoured = _HONOURED.get(key)
        if honoured is None:
            out.append(key)
            continue
        if isinstance(value, dict):
            out.extend(f"{key}.{sub}" for sub in value if sub not in honoured)
    return sorted(printable(k) for k in out)


def parse_harbor_toml(data: dict[str, Any], where: str) -> HarborTask:
    """A Harbor ``task.toml`` already parsed; a bad value is bad input naming the field."""
    try:
        return HarborTask(HarborConfig.model_validate(data), data)
    except ValidationError as exc:
        raise BadInput(f"{where}: {describe_validation_error(exc)}") from None
