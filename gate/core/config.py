"""``gate.toml``: the agent under test, the suite, and the gate's settings.

Relative paths in the file are relative to the file's directory; ``[agent]``'s
(:data:`AGENT_PATHS`) must stay inside it, symlinks resolved.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import typing
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gate._files import (
    CONFIG_LIMIT,
    describe_validation_error,
    parse_toml,
    printable,
    read_text,
)
from gate.core.metrics import BY_NAME, GATING
from gate.errors import BadInput
from gate.secrets import is_own

DEFAULT_CONFIG = "gate.toml"
#: ``[agent] upstream`` unset: the model API direct (a registered upstream, gate.upstream)
UPSTREAM_DEFAULT = "anthropic"


class _Strict(BaseModel):
    # TOML has nan and inf: neither is a price, a timeout or a level
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)


#: The dearest price a model may have, USD per million tokens: a hundred times today's dearest
#: (output, $75), far below what would take one run's cost past what a results file holds
#: (``gate.core.results.MAX_RUN_USD``) or a sum of costs past a finite number: a price of 1e308
#: passed as finite and ended the run in an internal error after the runs had spent.
MAX_PRICE = 10_000.0


class PriceOverride(_Strict):
    """USD per million tokens, finite, from 0 to ``MAX_PRICE``."""

    input: float = Field(ge=0, le=MAX_PRICE)
    output: float = Field(ge=0, le=MAX_PRICE)
    cache_write_5m: float | None = Field(default=None, ge=0, le=MAX_PRICE)
    cache_write_1h: float | None = Field(default=None, ge=0, le=MAX_PRICE)
    cache_read: float | None = Field(default=None, ge=0, le=MAX_PRICE)


#: ``[agent]`` keys that name a file or folder of the repository: relative to gate.toml's
#: folder and inside it, symlinks resolved (:meth:`GateConfig.agent_path`). The agent under
#: test is the PR's code: a path out of the checkout (``~/.docker/config.json``) would hand
#: the runner's files to it, its install's output, its fingerprint or the comment.
AGENT_PATHS = ("system_prompt", "install", "skills")


class AgentConfig(_Strict):
    # a registered agent kind (gate.agents): builtin, command, oracle. The registry checks the
    # name where it is looked up (config imports no registry: they import config)
    kind: str = "builtin"
    model: str = "claude-sonnet-5-5"
    # the model API the meter forwards to: a registered upstream (gate.upstream): "anthropic"
    # (direct), "gateway" (a Messages-compatible gateway: GATE_GATEWAY_URL and
    # GATE_GATEWAY_TOKEN in the environment). The session checks the name where it looks it up
    upstream: str = UPSTREAM_DEFAULT
    system_prompt: str | None = None
    tools: list[str] = Field(default_factory=lambda: ["bash", "read_file", "write_file",
                                                      "edit_file"])
    max_turns: int = Field(default=30, gt=0)
    max_tokens: int = Field(default=4096, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, gt=0, le=1)
    cache: Literal["5m", "1h", "off"] = "5m"
    command: str | None = None
    # a shell script (a path, relative to gate.toml) run as root, with network, in each task's
    # image before a command agent's runs: once per image and script within a job, its layer
    # committed and reused (gate/sandbox/_install.py); its text is in the agent's fingerprint
    install: str | None = Field(default=None, min_length=1, max_length=4096)
    install_timeout_sec: float = Field(default=600, gt=0, le=86_400)
    skills: str | None = None
    env: list[str] = Field(default_factory=list,
                           description="extra non-secret variables passed to a command agent")
    prices: dict[str, PriceOverride] = Field(default_factory=dict)

    @field_validator(*AGENT_PATHS)
    @classmethod
    def _in_the_repository(cls, v: str | None) -> str | None:
        if v is not None and (PurePosixPath(v).is_absolute() or v.startswith("~")
                              or ".." in PurePosixPath(v).parts or "\0" in v):
            raise ValueError(f"{printable(v)[:80]!r} is not a path inside the repository: "
                             "relative to gate.toml's folder, with no '/' first, '~' or '..'")
        return v


#: the private ranges a container with network never reaches unless ``[suite].allow_private``
#: names a part of one (gate/sandbox/_netguard.py): RFC 1918's, the carrier-grade NAT range
#: (RFC 6598; some clouds' internal services) and IPv6's unique local addresses (RFC 4193)
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")


def private_network(text: str) -> str:
    """``text`` as a network inside one of :data:`PRIVATE_RANGES`, written as ``ip`` and
    ``iptables`` write it; ``ValueError`` saying why it is not one."""
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        raise ValueError(f"{text[:60]!r} is not a network in CIDR form ({exc})") from None
    if not any(net.network_address in r and net.broadcast_address in r
               for r in map(ipaddress.ip_network, PRIVATE_RANGES)):
        raise ValueError(f"{net} is not inside a private range the guard closes "
                         f"({', '.join(PRIVATE_RANGES)})")
    return str(net)


class SuiteConfig(_Strict):
    tasks: str = "tasks"
    replications: int = Field(default=3, gt=0)
    jobs: int = Field(default=4, gt=0)
    verify_timeout: float = Field(default=30, gt=0)
    task_timeout: float = Field(default=600, gt=0)
    # where tasks run: a registered sandbox backend (gate.sandbox): "local" or "docker". Tasks
    # that name an image or have a Dockerfile run in docker whatever this says.
    sandbox: str = "local"
    image: str | None = Field(default=None, min_length=1, max_length=256,
                              description="the image of container tasks that name none")
    pull: bool | None = Field(default=None, description="pull a missing image; default: only "
                              "on GitHub's runners, where a registry is reachable")
    # variables of the host's environment that the local sandbox's commands get although they
    # hold a credential (a self-hosted runner's HTTPS_PROXY=http://user:pw@proxy): read from the
    # base branch on a PR like all of [suite]; never the gate's or the CI's own
    pass_env: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("pass_env")
    @classmethod
    def _not_the_gates_own(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
                raise ValueError(f"{name[:40]!r} is not an environment variable's name")
            if is_own(name):
                raise ValueError(f"{name} is the gate's, the CI's or an upstream's own: never "
                                 "passed to a task")
        return names

    # Harbor tasks whose verifier needs a service the agent started: the phase boundary keeps
    # their services running into the verifier (every other task's agent processes are stopped),
    # so their reward is not protected from the agent; the comment says so
    reward_unprotected: list[str] = Field(default_factory=list, description="task ids whose "
                                          "verifier needs a service the agent started")
    # server tools (the provider runs them, and may bill them per use) the meter lets an agent
    # offer: "web_search", "web_fetch", "code_execution", "mcp" (gate/meter/_provider.py); none
    # by default: a request that offers another is refused, as the agent's. Read from the base
    # branch on a PR like all of [suite]: a server tool gives even a no-network task the web
    server_tools: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=16)
    net_raw: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list, max_length=1000,
        description="tasks (ids) whose Harbor container keeps the NET_RAW capability (raw "
                    "and packet sockets); the gate drops it by default (docs/harbor-migration.md)")
    # private networks a container with network may reach (a task's or an install's public
    # phase): the guard rejects RFC 1918, CGNAT and IPv6 ULA ranges but for the host's
    # resolvers and the runner's proxies (gate/sandbox/_netguard.py); the base branch's on a PR
    allow_private: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=100,
        description="private networks (CIDR, e.g. 10.20.0.0/16) a task with network may reach")
    # what one run may write (its workspace, a container's writable layer) and what the
    # agent's install may commit, in MB: past it the run is stopped and fails as the agent's
    # doing; too little free disk for it is infra (gate/sandbox/_quota.py)
    disk_mb: int = Field(default=1024, gt=0, le=1_048_576, strict=True,
                         description="MB one run (or the agent's install) may write")

    @field_validator("allow_private")
    @classmethod
    def _private_networks(cls, nets: list[str]) -> list[str]:
        return [private_network(n) for n in nets]


    tamper_exempt: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list, max_length=1000,
        description="tasks (ids) whose Harbor verifier's world is not checked for tampering "
                    "by the agent's install or the agent (docs/harbor-migration.md)")


#: the looks' stops when ``sequential_pass_p`` is unset, by the number of looks: measured on
#: bench/bench_plan.py's suite (docs/statistics.md §5a)
DEFAULT_STOPS: dict[int, tuple[float, ...]] = {2: (0.13,), 3: (0.2, 0.08)}


class GateSettings(_Strict):
    """How the verdict is reached (docs/statistics.md) and what CI does with it."""

    baseline: str = "baseline.json"
    alpha: float = Field(default=0.01, gt=0, lt=0.5)
    # Per secondary metric (turns, cost, cache-hit). A level of 0.01 each lets the three
    # together block ~1-2 % of harmless PRs at small k; 0.003 (≈ 0.01 / 3, Bonferroni) keeps the
    # whole verdict under 1 % (bench/bench_verdict.py) and still blocks a +50 % cost every time.
    metric_alpha: float = Field(default=0.003, gt=0, lt=0.5)
    turns_margin: float = Field(default=0.10, ge=0)
    cost_margin: float = Field(default=0.10, ge=0)
    cache_hit_margin: float = Field(default=0.05, ge=0, le=1)
    # the metrics that may block (gate/core/metrics.py: those with a margin, and the pass rate)
    block_on: list[str] = Field(default_factory=lambda: list(GATING))
    min_comparable: float = Field(default=0.8, gt=0, le=1)
    max_infra_rate: float = Field(default=0.2, ge=0, le=1)
    permutations: int = Field(default=9999, ge=99)
    pool_size: int = Field(default=20, gt=0)
    # Sequential PR runs (docs/statistics.md §5): `first` runs per task in the first look and
    # `more` over the later looks (gate/compare/_plan.py spreads them); each look but the
    # last blocks at its share of the levels (:func:`gate.compare.look_share`) and stops as
    # "no regression" when the pass-rate p-value is above its stop (`stop_p`); the last decides.
    sequential: bool = True
    sequential_looks: Literal[2, 3] = 3
    sequential_first: int = Field(default=2, gt=0)
    sequential_more: int = Field(default=3, gt=0)
    # the stops of the looks before the last: one for all, or a list with one per look;
    # unset, the measured defaults (DEFAULT_STOPS)
    sequential_pass_p: float | list[float] | None = None
    # how a PR's runs are spread over the tasks (gate/compare/_plan.py): "by-pass-rate" plans
    # each task's runs per look from its baseline pass rate, "uniform" gives every task the same
    plan: Literal["by-pass-rate", "uniform"] = "by-pass-rate"
    seed: int = 0
    ci_level: float = Field(default=0.95, gt=0, lt=1,
                            description="confidence level of the pass-rate difference's interval")
    infra_alpha: float = Field(default=0.01, gt=0, lt=0.5,
                               description="Fisher test: the candidate errors more often")
    power_simulations: int = Field(default=200, ge=0,
                                   description="draws per step of the power search; 0 = skip")

    @field_validator("sequential_pass_p")
    @classmethod
    def _stops(cls, stops: float | list[float] | None) -> float | list[float] | None:
        for p in stops if isinstance(stops, list) else [] if stops is None else [stops]:
            if not 0 < p < 1:
                raise ValueError(f"a stop is a p-value between 0 and 1, not {p:g}")
        return stops

    @model_validator(mode="after")
    def _one_stop_a_look(self) -> GateSettings:
        stops = self.sequential_pass_p
        if isinstance(stops, list) and len(stops) != self.sequential_looks - 1:
            raise ValueError(f"sequential_pass_p: {len(stops)} stop{'s' if len(stops) != 1 else ''}"
                             f" for {self.sequential_looks} looks: give one for each look "
                             f"before the last ({self.sequential_looks - 1}), or one number")
        return self

    def stop_p(self, look: int) -> float:
        """Look ``look``'s stop (0-based, a look before the last): above it, the pass-rate
        p-value says "no regression" and no more runs are spent."""
        stops = self.sequential_pass_p
        if stops is None:
            return DEFAULT_STOPS[self.sequential_looks][look]
        return stops[look] if isinstance(stops, list) else stops

    @field_validator("block_on")
    @classmethod
    def _gating_metrics(cls, names: list[str]) -> list[str]:
        for name in names:
            if name not in BY_NAME:
                raise ValueError(f"{name[:40]!r} is not a metric (one of: {', '.join(GATING)})")
            if name not in GATING:
                raise ValueError(f"{name} is reported, never gating: it cannot block")
        return names


#: a comment id: letters, digits and ``._/:@+=-``, at most 100 (it sits in an HTML comment)
COMMENT_ID_PATTERN = r"^([A-Za-z0-9][A-Za-z0-9._/:@+=-]{0,99})?$"
#: the comment id of the default config (``gate.toml`` at the root): its suite also adopts a
#: comment with the gate's old id-less marker
DEFAULT_COMMENT_ID = DEFAULT_CONFIG
#: when a suite's comment is created (an existing one is always kept current, but in never)
CommentMode = Literal["always", "on-change", "on-regression", "never"]


#: what a pass rate the simulator cannot judge does to the verdict (gate/compare/_simjudge.py):
#: "inconclusive" exits 3, "pass" exits 0; the headline says "Not judged by the simulator" both ways
SimUnjudged = Literal["inconclusive", "pass"]


class CISettings(_Strict):
    """``[ci]``: what ``gate ci`` does with a verdict. Commenting and failing are separate."""

    comment: bool = True
    fail_on_regression: bool = True
    accept_label: str = "gate:accept-regression"
    # "commit": push the refreshed baseline.json to the default branch (needs contents: write);
    # "branch": push it to `data_branch` instead (an orphan branch: no protection rules, no CI
    # triggers, no noise in main's history); PRs read the base's baseline from there;
    # "artifact": leave it in the workspace for an upload step (no write permission needed).
    baseline_refresh: Literal["commit", "branch", "artifact"] = "artifact"
    data_branch: str = Field(default="agent-gate-data", max_length=200,
                             pattern=r"^[A-Za-z0-9_][A-Za-z0-9._/-]*$")
    # the PR comment warns when the baseline's newest runs are older than this
    stale_after_days: float = Field(default=30, gt=0)
    # JSONL of main-branch run summaries; the PR comment draws the trend from the base
    # branch's copy, so it must be committed (baseline_refresh = "commit") to show one.
    history: str = "gate-history.jsonl"
    history_size: int = Field(default=200, gt=0)
    # a PR whose secrets GitHub withholds (forks, Dependabot): "fail" exits 3, "skip" exits 0
    fork_without_key: Literal["fail", "skip"] = "fail"
    # the login the token comments as (a GitHub App's: "my-app[bot]"); "" = inferred
    comment_author: str = Field(default="", pattern=r"^([A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?)?$")
    # which of the PR's gate comments is this suite's: the id goes into the hidden marker, so
    # several suites (or a matrix over models) keep one comment each; "" = from the config path
    comment_id: str = Field(default="", pattern=COMMENT_ID_PATTERN)
    # when a comment is created: always | on-change | on-regression | never. An existing one
    # is always kept current (except never); `comment = false` is `never`
    comment_mode: CommentMode = "always"
    # what a PR is judged against: "baseline" (the stored one; none anywhere is exit 3), "ab"
    # (a same-job A/B against the base commit's agent, run in the PR's job: twice the cost,
    # immune to provider drift), "auto" (the baseline when one exists, else the A/B)
    judge: Literal["auto", "baseline", "ab"] = "auto"
    # both arms on the simulator and a change only a model reads (the prompt's words, tools, a
    # skill's text): the pass rate is "not judged by the simulator", and the verdict is
    # "inconclusive" (exit 3: a green check never says more than the gate saw) or "pass" (exit
    # 0, the headline still says it first). Turns, cost and cache hits are judged either way.
    sim_unjudged: SimUnjudged = "inconclusive"


    @field_validator("data_branch")
    @classmethod
    def _branch_name(cls, v: str) -> str:
        # what `git check-ref-format --branch` refuses, beyond the pattern's characters
        if ".." in v or "//" in v or v.endswith(("/", ".", ".lock")) or "/." in v:
            raise ValueError("not a valid git branch name")
        return v


def comment_mode(settings: CISettings) -> CommentMode:
    """The comment mode in force: ``comment = false`` (the older switch) is ``never``."""
    return "never" if not settings.comment else settings.comment_mode


#: a named condition: lowercase letters, digits, ``_`` and ``-`` (it names runs in results)
CONDITION_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_CONDITION_NAME = re.compile(CONDITION_NAME_PATTERN)
#: a skill's name, as the Agent Skills rules have it: lowercase letters, digits and single
#: hyphens, at most 64 characters (gate.core.skills loads skills by it; config checks [agent] lists)
SKILL_NAME_PATTERN = r"^(?=.{1,64}$)[a-z0-9]+(-[a-z0-9]+)*$"
#: the conditions every task gets from its metadata.json (gate.core.skills); not redefinable
STANDARD_CONDITION_NAMES = ("control", "target", "negative", "full", "target_plus_one",
                            "target_plus_unrelated")


#: ``[agent]`` keys a condition may not overlay: the kind is the agent under test, the
#: upstream is the session's (one meter forwards every condition's requests), and the skills
#: folder is what the conditions choose from
_NOT_OVERLAID = ("kind", "upstream", "skills")


class ConditionConfig(_Strict):
    """``[conditions.<name>]``: a named overlay, the same for every task: which of
    ``[agent].skills`` its runs get (names of skill folders), and any other ``[agent]``
    setting (``[conditions.<name>.agent]``: ``system_prompt``, ``max_turns``, ``model``, …)."""

    skills: list[str] = Field(default_factory=list)
    description: str | None = Field(default=None, max_length=500)
    agent: dict[str, Any] = Field(default_factory=dict)

    @field_validator("agent")
    @classmethod
    def _overlay(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if key in _NOT_OVERLAID:
                raise ValueError(f"{key!r} cannot differ between conditions (the conditions "
                                 "choose among [agent].skills with skills = [...])")
        AgentConfig.model_validate(v)  # unknown keys and bad values, named with their path
        return v

    def agent_config(self, base: AgentConfig) -> AgentConfig:
        """``base`` with this condition's ``[agent]`` overlay applied."""
        if not self.agent:
            return base
        return AgentConfig.model_validate({**base.model_dump(), **self.agent})

    @field_validator("skills")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.fullmatch(SKILL_NAME_PATTERN, name):
                raise ValueError(f"{printable(name)!r} is not a skill name (lowercase letters, "
                                 "digits and single hyphens)")
        if len(set(v)) != len(v):
            raise ValueError("a skill is listed twice")
        return v


class GateConfig(_Strict):
    agent: AgentConfig = Field(default_factory=AgentConfig)
    suite: SuiteConfig = Field(default_factory=SuiteConfig)
    gate: GateSettings = Field(default_factory=GateSettings)
    ci: CISettings = Field(default_factory=CISettings)
    conditions: dict[str, ConditionConfig] = Field(default_factory=dict)
    root: Path = Field(default_factory=Path.cwd, exclude=True)
    # the file this came from (None: no gate.toml, the defaults)
    source: Path | None = Field(default=None, exclude=True)

    @field_validator("conditions")
    @classmethod
    def _condition_names(cls, v: dict[str, ConditionConfig]) -> dict[str, ConditionConfig]:
        for name in v:
            if name in STANDARD_CONDITION_NAMES:
                raise ValueError(f"{name!r} is a standard condition (from each task's "
                                 "metadata.json); name the overlay otherwise")
            if not _CONDITION_NAME.fullmatch(name):
                raise ValueError(f"{printable(name)!r} is not a condition name (lowercase "
                                 "letters, digits, '_' and '-'; at most 64 characters)")
        return v

    def path(self, relative: str) -> Path:
        p = Path(relative)
        return p if p.is_absolute() else self.root / p

    def agent_path(self, key: str) -> Path:
        """``[agent].<key>`` (one of :data:`AGENT_PATHS`, set), resolved inside this suite's
        root (:func:`inside`)."""
        return inside(self.root, getattr(self.agent, key), self.where(f"agent.{key}"))

    def where(self, field: str) -> str:
        """``<file>: <field>``, to name a value of this configuration in an error."""
        return f"{self.source or DEFAULT_CONFIG}: {field}"


def inside(root: Path, relative: str, where: str) -> Path:
    """``relative`` resolved against ``root``, symlinks and all; ``BadInput`` (``where``: the
    file and the key) when it leads out of ``root``."""
    base = root.resolve()
    try:
        resolved = (base / relative).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise BadInput(f"{where}: {printable(relative)[:80]!r}: {exc}") from None
    if not resolved.is_relative_to(base):
        raise BadInput(f"{where}: {printable(relative)[:80]!r} leads out of the repository "
                       f"(gate.toml's folder, {printable(str(base))}) through a symlink: the "
                       "agent's files must be the repository's own")
    return resolved


def _agent_paths_inside(cfg: GateConfig, where: str) -> None:
    """Every ``[agent]`` path, and each condition's overlay of one, inside the suite's root."""
    for key in AGENT_PATHS:
        if getattr(cfg.agent, key):
            inside(cfg.root, getattr(cfg.agent, key), f"{where}: agent.{key}")
        for name, condition in cfg.conditions.items():
            if isinstance(condition.agent.get(key), str):
                inside(cfg.root, condition.agent[key], f"{where}: conditions.{name}.agent.{key}")


def load_config(path: str | Path | None) -> GateConfig:
    """Load ``gate.toml``. With no path, ``./gate.toml`` if present, else the defaults."""
    if path is None:
        candidate = Path(DEFAULT_CONFIG)
        if not candidate.exists():
            return GateConfig(root=Path.cwd())
        path = candidate
    p = Path(path)
    cfg = parse_config(read_text(p, CONFIG_LIMIT, "config file"), where=str(p),
                       root=p.resolve().parent)
    # where the file is named, not where a symlink points: on a PR the base branch's copy is
    # read at this path (gate.toml as a link to a file the base lacks is still gate.toml)
    cfg.source = Path(os.path.abspath(p))
    return cfg


def parse_config(text: str, *, where: str, root: Path) -> GateConfig:
    """A ``gate.toml``'s text (e.g. the base branch's copy), validated; ``where`` names it in
    errors. Relative paths in it resolve against ``root``."""
    data = parse_toml(text, where, "config file")
    try:
        cfg = GateConfig.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"{where}: {unknown_key(exc) or describe_validation_error(exc)}") \
            from None
    cfg.root = root
    _agent_paths_inside(cfg, where)
    return cfg


#: where a field's value is validated as another model's keys (a condition's overlay of
#: ``[agent]``): its unknown keys are that model's, but for those it may not set
_OVERLAYS: dict[tuple[type[BaseModel], str], tuple[type[BaseModel], tuple[str, ...]]] = {
    (ConditionConfig, "agent"): (AgentConfig, _NOT_OVERLAID)}


def _table_keys(loc: tuple[str | int, ...]) -> list[str] | None:
    """The keys the table at ``loc`` (a path from the file's top) may hold, in the model's
    order, or None when the path does not lead to a table of the gate's."""
    model: type[BaseModel] = GateConfig
    barred: tuple[str, ...] = ()
    parts = list(loc)
    while parts:
        name = str(parts.pop(0))
        if name not in model.model_fields:
            return None
        overlay, barred = _OVERLAYS.get((model, name), (None, ()))
        annotation = overlay or model.model_fields[name].annotation
        if typing.get_origin(annotation) is dict:  # a table of named tables: skip the name
            annotation = typing.get_args(annotation)[1]
            if not parts:
                return None
            parts.pop(0)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return [name for name, f in model.model_fields.items()
            if not f.exclude and name not in barred]


def _table_name(loc: tuple[str | int, ...]) -> str:
    return "[" + ".".join(printable(str(p)) if re.fullmatch(r"[A-Za-z0-9_-]+", str(p))
                          else f'"{printable(str(p))[:40]}"' for p in loc) + "]"


def unknown_key(exc: ValidationError) -> str | None:
    """A key gate.toml does not have, as ``field: unknown key; did you mean `x`? [table]
    has: ...`` (the nearest valid key, by difflib, and all of them), or None when the error
    is not an unknown key. An unknown key is told before any other error: a misspelled key
    is also why the key it meant is missing."""
    err = next((e for e in exc.errors() if e.get("type") == "extra_forbidden"), None)
    if err is None or not err.get("loc"):
        return None
    *table, key = err["loc"]
    keys = _table_keys(tuple(table))
    if keys is None:
        return None
    near = difflib.get_close_matches(str(key), keys, n=1, cutoff=0.6)
    field = ".".join(printable(str(p))[:40] for p in err["loc"])
    if not table:
        sections = ", ".join(f"[{k}]" for k in keys)
        hint = f"; did you mean `[{near[0]}]`? " if near else "; "
        return f"{field}: unknown section{hint}gate.toml has: {sections}"
    hint = f"; did you mean `{near[0]}`? " if near else "; "
    return f"{field}: unknown key{hint}{_table_name(tuple(table))} has: {', '.join(keys)}"
