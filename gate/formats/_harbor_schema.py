"""Harbor's ``task.toml`` schema (Harbor / Terminal-Bench, SkillsBench), read unchanged.

The task format itself (layout, scripts, verifier, rewards, steps) is
:mod:`gate.formats._harbor`; this module is the schema of its ``task.toml``, checked against
Harbor's own ``src/harbor/models/task/config.py`` (harbor-framework/harbor, read through a
public mirror at 7d91dbfa) and its docs (``docs/content/docs/tasks/index.mdx``,
``tasks/multi-step.mdx``):

- legacy resource keys: ``memory = "4G"`` / ``storage = "10G"`` become ``memory_mb`` /
  ``storage_mb`` as Harbor's ``_migrate_legacy_resource_fields`` converts them (``G`` x1024,
  ``M``, ``K`` /1024; anything else is an error; a conflicting ``memory_mb`` is an error);
  ``version`` is the old name of ``schema_version``;
- ``[[steps]]`` (``name``, ``[steps.agent]`` / ``[steps.verifier]`` overrides, ``min_reward``
  as a number or per key) and ``multi_step_reward_strategy`` (``mean``, Harbor's default, or
  ``final``);
- ``[environment] skills_dir`` (skills inside the image) and ``workdir`` (overrides the image's
  ``WORKDIR``).

Harbor's ``task.toml`` keeps Harbor's semantics: timeouts (``[agent]`` / ``[verifier]``
``timeout_sec``), resources (``[environment]`` ``cpus``, ``memory_mb``, ``storage_mb``,
``build_timeout_sec``), ``docker_image``, users, and the network policy per phase
(``network_mode`` = public / no-network / allowlist with ``allowed_hosts`` in ``[environment]``,
``[agent]`` and ``[verifier]`` overrides; the older ``allow_internet``). Harbor's default is a
public network. A key the gate does not honour is *listed* (:attr:`HarborTask.unhonoured`),
never silently dropped (unless it is empty or at Harbor's own default: then it asks nothing);
a value it cannot honour safely (GPUs, an allowlist it cannot enforce, host variables
templated into the environment) makes the task refused, with the reason.
"""

from __future__ import annotations

import contextlib
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
ARTIFACTS_DIR = "/logs/artifacts"  # Harbor's convention folder: its files are always collected

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


class HarborHealthcheck(_Section):
    """``[environment.healthcheck]`` / ``[steps.healthcheck]`` (Harbor's ``HealthcheckConfig``,
    Docker ``HEALTHCHECK`` polling): ``command`` until it exits 0; a failure inside
    ``start_period_sec`` does not count (retried every ``start_interval_sec``); after it,
    ``retries`` consecutive failures, ``interval_sec`` apart, fail the check."""

    command: str = Field(min_length=1, max_length=65536)
    interval_sec: float = Field(default=5.0, ge=0, le=3600)
    timeout_sec: float = Field(default=30.0, gt=0, le=3600)
    start_period_sec: float = Field(default=0.0, ge=0, le=3600)
    start_interval_sec: float = Field(default=5.0, ge=0, le=3600)
    retries: int = Field(default=3, gt=0, le=1000)


class HarborArtifact(_Section):
    """One entry of ``artifacts`` (Harbor's ``ArtifactConfig``): a container path, kept with
    the run under ``artifacts/`` at its own path, or at ``destination``."""

    source: str = Field(pattern=r"^/", max_length=4096)
    destination: str | None = Field(default=None, min_length=1, max_length=4096)

    @model_validator(mode="before")
    @classmethod
    def _a_path(cls, data: Any) -> Any:
        return {"source": data} if isinstance(data, str) else data

    @property
    def name(self) -> str:
        """Where it lands under ``artifacts/`` (Harbor mirrors the container path)."""
        return (self.destination or self.source).strip("/")


def size_to_mb(size: str) -> int:
    """Harbor's ``EnvironmentConfig._parse_size_to_mb``: ``"4G"`` → 4096, ``"512M"`` → 512."""
    text = size.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(text[-1:])
    try:
        if scale is None:
            raise ValueError
        return int(float(text[:-1]) * scale)
    except ValueError:
        raise ValueError(f"invalid size {size!r} (expected e.g. '4G', '512M')") from None


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
    skills_dir: str | None = Field(default=None, min_length=1, max_length=4096)
    workdir: str | None = Field(default=None, pattern=r"^/", max_length=4096)
    healthcheck: HarborHealthcheck | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        """``memory`` / ``storage`` (TB2, SkillsBench) as Harbor converts them."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for legacy, key in (("memory", "memory_mb"), ("storage", "storage_mb")):
            if legacy not in data:
                continue
            value = data.pop(legacy)
            if not isinstance(value, str):
                raise ValueError(f"{legacy}: must be a size like '4G' (or use {key})")
            mb = size_to_mb(value)
            if key in data and data[key] != mb:
                raise ValueError(f"{legacy} = {value!r} ({mb} MB) conflicts with "
                                 f"{key} = {data[key]!r}")
            data.setdefault(key, mb)
        return data

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


class HarborStep(_Section):
    """One ``[[steps]]`` entry (Harbor's ``StepConfig``): unset values fall back to the task's."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
    agent: _Phase = Field(default_factory=_Phase)
    verifier: _Phase = Field(default_factory=_Phase)
    min_reward: float | dict[str, float] | None = None
    healthcheck: HarborHealthcheck | None = None
    artifacts: list[HarborArtifact] = Field(default_factory=list, max_length=100)


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
    steps: list[HarborStep] | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    artifacts: list[HarborArtifact] = Field(default_factory=list, max_length=100)

    @model_validator(mode="after")
    def _unique_steps(self) -> HarborConfig:
        names = [s.name for s in self.steps or ()]
        if len(set(names)) != len(names):
            raise ValueError("steps: two steps have the same name")
        return self


#: Harbor keys the gate reads but does not act on (information only).
_INFORMATIONAL = {"version", "schema_version", "metadata", "task", "source",
                  "multi_step_reward_strategy"}
#: Keys of a phase that the gate honours, per section.
_HONOURED = {
    "agent": {"timeout_sec", "user", "network_mode", "allowed_hosts"},
    "verifier": {"timeout_sec", "user", "network_mode", "allowed_hosts", "env",
                 "environment_mode"},  # "shared" honoured, anything else refused
    "solution": {"env"},
    "environment": {"build_timeout_sec", "docker_image", "cpus", "memory_mb", "memory", "gpus",
                    "allow_internet", "network_mode", "allowed_hosts", "env", "skills_dir",
                    "workdir", "healthcheck"},
}
_STEP_HONOURED = {"name", "agent", "verifier", "min_reward", "healthcheck", "artifacts"}
#: Top-level keys (not sections) the gate honours.
_TOP_HONOURED = {"artifacts"}


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

    def network(self, phase: Literal["agent", "verifier"],
                step: HarborStep | None = None) -> NetworkMode:
        """The phase's network: the step's, else the task's phase, else the baseline."""
        own = getattr(step, phase).network_mode if step is not None else None
        return own or (self.agent_network if phase == "agent" else self.verifier_network)

    @property
    def difficulty(self) -> str | None:
        d = self.config.metadata.get("difficulty")
        return d if isinstance(d, str) and d in {"easy", "medium", "hard"} else None

    def refusal(self) -> str | None:
        """Why the gate cannot run this task as Harbor would (``None``: it can)."""
        cfg = self.config
        if cfg.environment.gpus > 0:
            return f"task.toml: [environment] gpus = {cfg.environment.gpus}: no GPU here"
        for section, verifier in (("verifier", cfg.verifier),
                                  *((f"steps.{s.name}.verifier", s.verifier)
                                    for s in self.steps)):
            extra = verifier.model_extra or {}
            if extra.get("environment_mode", "shared") != "shared" or "environment" in extra:
                return (f"task.toml: [{section}] asks for a verifier sandbox of its own "
                        "(environment_mode = 'separate'), which the gate does not build yet "
                        "(it never runs that verifier in the agent's container instead)")
        modes = [("agent", self.agent_network), ("verifier", self.verifier_network)]
        modes += [(f"step {s.name!r} {p}", self.network(p, s)) for s in self.steps
                  for p in ("agent", "verifier")]
        for phase, mode in modes:
            if mode == "allowlist":
                return (f"task.toml: the {phase} phase's network_mode is 'allowlist', which the "
                        "docker sandbox cannot enforce yet (it never widens it to public)")
        steps = [(f"steps.{s.name}.verifier", s.verifier.env) for s in self.steps]
        for section, env in (("environment", cfg.environment.env),
                             ("verifier", cfg.verifier.env), ("solution", cfg.solution.env),
                             *steps):
            for key, value in env.items():
                if "${" in value:
                    return (f"task.toml: [{section}] env {printable(key)}: host variables "
                            "(${...}) are never passed into a sandbox")
        return None

    def env(self, phase: Literal["agent", "verifier", "solution"],
            step: HarborStep | None = None) -> dict[str, str]:
        """The task's literal variables for a phase: ``[environment].env`` then the phase's
        (then the step's verifier env, as Harbor merges ``[steps.verifier] env``)."""
        own = {"agent": {}, "verifier": self.config.verifier.env,
               "solution": self.config.solution.env}[phase]
        extra = step.verifier.env if step is not None and phase == "verifier" else {}
        return {**self.config.environment.env, **own, **extra}

    @property
    def steps(self) -> list[HarborStep]:
        """The ``[[steps]]`` of a multi-step task (empty: a single-step task)."""
        return list(self.config.steps or ())

    def user(self, phase: Literal["agent", "verifier"],
             step: HarborStep | None = None) -> str | int | None:
        """The phase's user: the step's, else the task's (``None``: the image's ``USER``)."""
        own = getattr(step, phase).user if step is not None else None
        return own if own is not None else getattr(self.config, phase).user

    def timeout(self, phase: Literal["agent", "verifier"],
                step: HarborStep | None = None) -> float | None:
        """The phase's timeout: the step's, else the task's (Harbor's fallback)."""
        own = getattr(step, phase).timeout_sec if step is not None else None
        return own if own is not None else getattr(self.config, phase).timeout_sec


#: Harbor's own defaults (``EnvironmentConfig``) of keys the gate does not act on: a key left
#: at its default (or empty) asks nothing of the gate and is not listed
_DEFAULTS: dict[str, Any] = {"environment.gpu_types": None, "environment.mcp_servers": []}
#: keys Harbor's docker environment does not act on either, so they change no reward and are
#: never listed: a storage size (its compose file passes only ``CPUS`` and ``MEMORY``, and the
#: engine sets no disk quota) and ``image``, which is not Harbor's key (``docker_image`` is)
_IGNORED_BY_HARBOR = {"environment.storage", "environment.storage_mb", "environment.image"}


def _asks(key: str, value: Any) -> bool:
    """Whether a key the gate does not honour asks something of it (not empty, not Harbor's
    default; a legacy size compared in MB)."""
    if value in (None, "", [], {}):
        return False
    if key in _DEFAULTS:
        with contextlib.suppress(ValueError, AttributeError):
            value = size_to_mb(value) if isinstance(value, str) else value
        return bool(value != _DEFAULTS[key])
    return True


def _unhonoured(raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key, value in raw.items():
        if key in _INFORMATIONAL or key in _TOP_HONOURED or key == "steps":
            continue
        honoured = _HONOURED.get(key)
        if honoured is None:
            if _asks(key, value):
                out.append(key)
            continue
        if isinstance(value, dict):
            out.extend(f"{key}.{sub}" for sub, v in value.items()
                       if sub not in honoured and f"{key}.{sub}" not in _IGNORED_BY_HARBOR
                       and _asks(f"{key}.{sub}", v))
    for step in raw.get("steps") or ():
        if isinstance(step, dict):
            out.extend(f"steps.{sub}" for sub, v in step.items()
                       if sub not in _STEP_HONOURED and _asks(sub, v))
            for phase in ("agent", "verifier"):
                sub = step.get(phase)
                if isinstance(sub, dict):
                    out.extend(f"steps.{phase}.{k}" for k, v in sub.items()
                               if k not in _HONOURED[phase] and _asks(k, v))
    return sorted({printable(k) for k in out})


def parse_harbor_toml(data: dict[str, Any], where: str) -> HarborTask:
    """A Harbor ``task.toml`` already parsed; a bad value is bad input naming the field."""
    try:
        return HarborTask(HarborConfig.model_validate(data), data)
    except ValidationError as exc:
        raise BadInput(f"{where}: {describe_validation_error(exc)}") from None
