"""Harbor-format tasks (Harbor, Terminal-Bench 2, SkillsBench), loaded and run unchanged.

Each rule below was checked against Harbor's own code and docs (harbor-framework/harbor, read
through a public mirror at commit 7d91dbfa; file names are Harbor's):

- **Layout** (``docs/content/docs/tasks/index.mdx``, ``models/task/paths.py``):
  ``instruction.md``, ``task.toml`` (schema: :mod:`gate.formats._harbor_schema`),
  ``environment/Dockerfile``
  (or ``[environment] docker_image``), ``tests/test.sh``, ``solution/solve.sh``.
- **Multi-step** (``docs/.../tasks/multi-step.mdx``, ``trial/multi_step.py``): ``[[steps]]`` in
  ``task.toml``, ``steps/<name>/instruction.md`` each; a step's ``workdir/`` is copied into the
  working directory and its ``workdir/setup.sh`` run before its agent; its verifier gets the
  task's ``tests/`` then the step's ``tests/`` over it (the step's ``test.sh`` wins); a step
  whose rewards miss its ``min_reward`` (a number: the ``reward`` key; a table: every key
  named, a missing key is -inf) ends the run; the run's rewards are the per-key mean over the
  verified steps (missing keys 0) or, with ``multi_step_reward_strategy = "final"``, the last
  step's.
- **Verifier** (``verifier/verifier.py``, ``utils/scripts.py``): ``/tests`` uploaded only at
  verify time, the script run as ``(/tests/test.sh) > /logs/verifier/test-stdout.txt 2>&1``
  after ``chmod +x``, as ``[verifier] user`` with ``[verifier] env``; rewards from
  ``/logs/verifier/reward.json`` when it exists (its numeric, non-boolean values, by name),
  else ``reward.txt`` (one number, the ``reward`` key); an empty or unreadable file is no
  reward. Everything the verifier leaves in ``/logs/verifier`` (``test-stdout.txt``,
  ``ctrf.json`` ...) is kept with the run (Harbor downloads the directory into the trial).
- **Pass** (Harbor records rewards, it does not pass or fail a trial; the gate needs a verdict):
  with a ``reward`` key the task passes at ``reward >= 1``; with one named reward, at that one
  (as ``metrics/base.py:aggregate_reward_dicts`` reads a single key); with several named
  rewards and no ``reward``, when every one is >= 1 (as a per-key ``min_reward`` table gates
  each key). The rewards are the run's score; a fractional reward is a fail with its value.
- **Phase boundary**: Harbor's default (shared) mode leaves everything the agent started
  running into the verifier (``trial/trial.py:_run_shared_verifier``; only its separate
  verifier sandbox, ``news/separate-verifier-sandboxes.mdx``, cuts it). *Where the gate
  differs*: when the agent phase ends, every process it started is killed
  (:mod:`gate.sandbox._procs`: none spared by name, socket or command line), so nothing of the
  agent can rewrite the verifier's files after ``/logs/verifier`` is emptied; when the run
  fails, its reason names what was stopped. Terminal-Bench 2 relies on Harbor's way for
  services (a solution starts nginx or a package index, the tests talk to it): the tasks the
  suite's owner lists in ``[suite].reward_unprotected`` (the base branch's on a PR) keep the
  processes listening on a TCP port (with their parents and workers), listed with the
  verifier's files and flagged "reward unprotected" in the comment. Every task's reward files
  are looked at as soon as ``test.sh`` exits and again a moment later (:data:`REREAD_S`): a
  change (content, size or modification time) fails the run as tampering.
- **Healthchecks** (``[environment.healthcheck]``, ``[steps.healthcheck]``; Harbor's
  ``HealthcheckConfig``, Docker ``HEALTHCHECK`` polling): the environment's runs once the
  container is up, before anything of the run; a step's after its ``workdir/`` and
  ``setup.sh``, before its agent; the command runs as root. A check that never passes before
  any agent acted is an infra error, as Harbor fails the trial. *Where the gate differs*: one
  that fails before a later step (the earlier steps' agent left the environment unready) fails
  the run, with the step's name: counted as infra it would hide a regression.
- **Artifacts** (``artifacts`` in ``task.toml`` and per step; ``trial/artifact_handler.py``):
  after each verify, the files of ``/logs/artifacts`` and of each listed path (a file or a
  folder; ``destination`` renames it) are kept with the run beside the verifier's files, under
  ``artifacts/`` at their container path; a path that is not there is skipped.
- **Compose** (``environment/docker-compose.yaml``, ``environments/docker/docker.py``): a
  one-service override of ``main`` (SkillsBench's: variables, resource limits, the log
  folders) is mapped onto the one container (:mod:`gate.formats._compose`); a second service,
  or a key one container cannot honour, is refused naming it. So is a separate
  verifier (``[verifier] environment_mode = "separate"`` or ``[verifier.environment]``, per
  step too): the gate builds no verifier sandbox yet, and never widens one to the agent's.
- **Network per phase** (``trial/network_policy.py``): the agent's and the verifier's
  ``network_mode`` (steps override), switched on the live container.
- **Skills** (``[environment] skills_dir``, ``trial.py:_resolve_effective_skills_dir``;
  SkillsBench ships ``environment/skills/<name>/SKILL.md`` and its Dockerfile copies them to
  the agents' skill folders): the task's own skills (``environment/skills/``, else the folder
  the Dockerfile copies to ``skills_dir``) are skills like any other for the gate's conditions;
  a run without one has it removed from ``skills_dir`` and from every place the Dockerfile
  copies that folder to. The run's skills go into each agent user's own ``~/.claude/skills``
  (Harbor's ``agents/installed/claude_code.py`` copies ``~/.claude/skills`` and ``skills_dir``
  into Claude Code's config directory at the agent's start), never into the working directory.
  *Where the gate differs*: a run under a condition has every skill it does not get removed
  from each folder a skill-loading agent reads (each agent user's ``~/.claude/skills``, the
  working directory's ``.claude/skills``, ``skills_dir`` and the Dockerfile's copies), skills
  only the image holds included; a ``SKILL.md`` elsewhere in the image is named in the run's
  notes (:mod:`gate.sandbox._harbor`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate._files import (
    PROMPT_LIMIT,
    TASK_META_LIMIT,
    clip,
    digest_dir,
    json_problem,
    read_text,
    read_toml,
)
from gate.errors import BadInput, ContainerStepError, SandboxError
from gate.formats import (
    NEEDS_CONTAINER,
    Container,
    ContainerSpec,
    ExecResult,
    Task,
    TaskEnvironment,
    TaskFormat,
    TaskMeta,
    TaskStep,
    Verification,
    Workspace,
    reading,
)
from gate.formats._compose import ComposeMain, Refused, compose_main
from gate.formats._harbor_schema import (
    AGENT_LOGS,
    ARTIFACTS_DIR,
    DEFAULT_VERIFIER_TIMEOUT,
    REWARD_JSON,
    REWARD_TXT,
    SOLUTION_DIR,
    TESTS_DIR,
    VERIFIER_LOGS,
    HarborArtifact,
    HarborHealthcheck,
    HarborStep,
    HarborTask,
    parse_harbor_toml,
)

REWARD_LIMIT = 100_000  # bytes of a reward file
REREAD_S = 0.5  # how long after the verifier's exit the reward files are looked at again
TAMPERED = "reward changed after the verifier wrote it: tampering"
STAMP_END = "end-of-stamp"  # the reward stamp's last line: its answer came back whole
FILE_CHARS = 16_000  # characters kept of each file the verifier leaves
FILES_KEPT = 20  # files kept of /logs/verifier, and of the artifacts
TEST_STDOUT = f"{VERIFIER_LOGS}/test-stdout.txt"
_COPY = re.compile(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*(.+)$", re.IGNORECASE)


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


def harbor_of(task: Task) -> HarborTask:
    """The Harbor ``task.toml`` a Harbor-format task was loaded from (its :attr:`Task.native`)."""
    if not isinstance(task.native, HarborTask):
        raise SandboxError(f"{task.id}: not a Harbor-format task")
    return task.native


class Unhealthy(SandboxError):
    """A healthcheck that never passed (its reason)."""


def healthcheck(box: Container, check: HarborHealthcheck, what: str) -> None:
    """Poll ``check.command`` in the container as Harbor (and Docker's ``HEALTHCHECK``) does;
    :class:`Unhealthy` naming ``what`` when it never passes."""
    grace_ends = time.monotonic() + check.start_period_sec
    if check.start_period_sec > 0 and check.start_interval_sec > 0:
        time.sleep(min(check.start_interval_sec, check.start_period_sec))
    failures = 0
    while True:
        res = box.run_as(["bash", "-c", check.command], user="0", env=box.command_env(),
                         timeout=check.timeout_sec)
        if res.returncode == 0 and not res.timed_out:
            return
        now = time.monotonic()
        if now < grace_ends:  # inside the start period: not counted
            time.sleep(max(0.0, min(check.start_interval_sec, grace_ends - now)))
            continue
        failures += 1
        if failures >= check.retries:
            how = f"timed out after {check.timeout_sec:g} s" if res.timed_out \
                else f"exit {res.returncode}"
            tail = f": {_tail(res.output)}" if res.output.strip() else ""
            raise Unhealthy(f"the {what} healthcheck failed {check.retries} time(s) in a row "
                            f"({how}){tail}")
        time.sleep(check.interval_sec)


def _user(user: str | int | None) -> str:
    """A phase's user for the container: ``""`` is the image's ``USER`` (Harbor's default for
    every phase whose user is unset, the verifier's included)."""
    return "" if user is None else str(user)


def _reader(path: Path) -> Callable[[], str]:
    return lambda: read_text(path, PROMPT_LIMIT, "instruction.md")


def _step_prompts(name: str, path: Path, harbor: HarborTask) -> tuple[TaskStep, ...]:
    out: list[TaskStep] = []
    for step in harbor.steps:
        p = path / "steps" / step.name / "instruction.md"
        if not p.is_file():
            raise BadInput(f"{name}: steps/{step.name}/instruction.md is missing (every "
                           "[[steps]] entry needs one)")
        if not (path / "steps" / step.name / "tests" / "test.sh").is_file() and not (
                path / "tests" / "test.sh").is_file():
            raise BadInput(f"{name}: step {step.name!r} has no verifier (steps/{step.name}/"
                           "tests/test.sh or tests/test.sh)")
        prompt: str = reading(name, p, _reader(p))
        out.append(TaskStep(step.name, prompt, task_timeout=harbor.timeout("agent", step),
                            verify_timeout=harbor.timeout("verifier", step)))
    return tuple(out)


def _copies(path: Path) -> list[tuple[list[str], str]]:
    """The Dockerfile's ``COPY`` / ``ADD`` lines: (sources, destination)."""
    dockerfile = path / "environment" / "Dockerfile"
    if not dockerfile.is_file():
        return []
    out: list[tuple[list[str], str]] = []
    for line in dockerfile.read_text(encoding="utf-8", errors="replace").splitlines():
        m = _COPY.match(line)
        words = _copy_words(m.group(1)) if m else []
        if len(words) >= 2:
            out.append(([w.rstrip("/").removeprefix("./") for w in words[:-1]],
                        words[-1].rstrip("/") or "/"))
    return out


def _is_skills(folder: Path) -> bool:
    return folder.is_dir() and any((d / "SKILL.md").is_file()
                                   for d in folder.iterdir() if d.is_dir())


def skills_source(path: Path, skills_dir: str | None) -> Path | None:
    """The folder of skills the task ships: ``environment/skills/`` (SkillsBench), else the
    build-context folder the Dockerfile copies to ``[environment] skills_dir``."""
    if _is_skills(path / "environment" / "skills"):
        return (path / "environment" / "skills").resolve()
    if skills_dir:
        for sources, dest in _copies(path):
            for src in sources:
                folder = path / "environment" / src
                if dest == skills_dir.rstrip("/") and ".." not in Path(src).parts and \
                        _is_skills(folder):
                    return folder.resolve()
    return None


def baked_skill_dirs(task: Task) -> list[str]:
    """Where the image holds the task's own skills: ``[environment] skills_dir`` and every
    absolute destination the Dockerfile copies the skills' folder to (SkillsBench copies
    ``skills`` to each agent's skill folder)."""
    dirs: list[str] = []
    if skills_dir := harbor_of(task).config.environment.skills_dir:
        dirs.append(skills_dir.rstrip("/") or "/")
    if task.skills_root is not None:
        name = task.skills_root.relative_to(task.path / "environment").as_posix()
        dirs += [dest for sources, dest in _copies(task.path)
                 if name in sources and dest.startswith("/")]
    return sorted(set(dirs))


def _agent_users(task: Task) -> tuple[str, ...]:
    """Every user an agent phase of ``task`` runs as (the task's, each step's), in order."""
    h = harbor_of(task)
    users = [_user(h.user("agent", step)) for step in h.steps] or [_user(h.user("agent"))]
    return tuple(dict.fromkeys(users))


def _copy_words(args: str) -> list[str]:
    """A ``COPY`` / ``ADD`` line's sources and destination (shell or JSON form)."""
    try:
        if args.lstrip().startswith("["):
            words = json.loads(args)
            return [w for w in words if isinstance(w, str)] if isinstance(words, list) else []
        return shlex.split(args, posix=True)
    except ValueError:
        return []


class HarborFormat(TaskFormat):
    name = "harbor"
    lifecycle = "per_run"

    def detect(self, path: Path) -> bool:
        if (path / "task.md").exists():
            return False
        return (path / "instruction.md").is_file() or (
            (path / "steps").is_dir() and (path / "task.toml").is_file())

    # ----- loading ------------------------------------------------------------------------

    def load(self, path: Path, name: str) -> Task:
        toml_path = path / "task.toml"
        data: dict[str, Any] = {}
        if toml_path.exists():
            data = reading(name, toml_path,
                           lambda: read_toml(toml_path, TASK_META_LIMIT, "task.toml"))
        harbor = parse_harbor_toml(data, f"{name}: task.toml")
        cfg = harbor.config
        if harbor.steps:
            steps = _step_prompts(name, path, harbor)
            prompt = steps[0].prompt
        else:
            if (path / "steps").is_dir() and not (path / "instruction.md").is_file():
                raise BadInput(f"{name}: steps/ but no [[steps]] in task.toml (a multi-step "
                               "task lists its steps there)")
            if not (path / "tests" / "test.sh").is_file():
                raise BadInput(f"{name}: missing tests/test.sh (a Harbor task's verifier)")
            steps = ()
            prompt_path = path / "instruction.md"
            prompt = reading(name, prompt_path,
                             lambda: read_text(prompt_path, PROMPT_LIMIT, "instruction.md"))
        env = cfg.environment
        if env.docker_image is None and not (path / "environment" / "Dockerfile").is_file():
            raise BadInput(f"{name}: a Harbor task needs environment/Dockerfile or "
                           "[environment] docker_image in task.toml")
        category, tags = cfg.metadata.get("category"), cfg.metadata.get("tags")
        meta = TaskMeta(
            difficulty=harbor.difficulty,
            category=category if isinstance(category, str) else None,
            tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
            verify_timeout=cfg.verifier.timeout_sec or DEFAULT_VERIFIER_TIMEOUT,
            task_timeout=cfg.agent.timeout_sec,
            environment=TaskEnvironment(image=env.docker_image, cpus=env.cpus,
                                        memory_mb=env.memory_mb),
        )
        try:  # a malformed compose file is bad input; what it asks is judged by refusal()
            compose_main(path, cpus=env.cpus, memory_mb=env.memory_mb, task_env=env.env,
                         environ=os.environ)
        except Refused:
            pass
        except BadInput as exc:
            raise BadInput(f"{name}: {exc}") from exc
        own_skills = skills_source(path, env.skills_dir)
        root = path.resolve()
        return Task(id=path.name, path=root, prompt=prompt, digest=digest_dir(path),
                    meta=meta, metadata=dict(cfg.metadata), native=harbor,
                    format_name=self.name, steps=steps, skills_root=own_skills,
                    verify_script=root / "tests" / "test.sh",
                    container_need=f"a Harbor-format task {NEEDS_CONTAINER}",
                    build_timeout=env.build_timeout_sec, unhonoured=harbor.unhonoured,
                    solution_env=harbor.env("solution"))

    def refusal(self, task: Task) -> str | None:
        try:
            self._compose(task)
        except Refused as exc:
            return str(exc)
        return harbor_of(task).refusal()

    @staticmethod
    def _compose(task: Task) -> ComposeMain | None:
        """The task's one-service override of ``main`` (None: it has no compose file), with
        the host's variables as they are now (:mod:`gate.formats._compose`)."""
        env = harbor_of(task).config.environment
        return compose_main(task.path, cpus=env.cpus, memory_mb=env.memory_mb,
                            task_env=env.env, environ=os.environ)

    # ----- the container ------------------------------------------------------------------

    def container_spec(self, task: Task) -> ContainerSpec:
        h = harbor_of(task)
        cfg = h.config
        user = h.user("agent", self._step(task, 0))
        compose = self._compose(task) or ComposeMain()  # over task.toml's, as Harbor merges it
        return ContainerSpec(
            workdir=cfg.environment.workdir, user=_user(user),
            env={**compose.env, **cfg.environment.env},
            network=h.network("agent", self._step(task, 0)),
            cpus=compose.cpus or cfg.environment.cpus,
            memory_mb=compose.memory_mb or cfg.environment.memory_mb, runner_dir=AGENT_LOGS,
            baked_skills=tuple(baked_skill_dirs(task)), skill_users=_agent_users(task))

    @staticmethod
    def _step(task: Task, index: int) -> HarborStep | None:
        steps = harbor_of(task).steps
        return steps[index] if steps and index < len(steps) else None

    def start(self, sandbox: Workspace) -> None:
        """Once the container is up: the environment's healthcheck; then, before the first
        step's agent, its ``workdir/``, ``setup.sh`` and healthcheck."""
        task = sandbox.task
        compose = self._compose(task)
        for folder in compose.log_dirs if compose else ():  # empty, as Harbor's mount is
            if folder != AGENT_LOGS:  # the runner's, made so by the sandbox
                self._container(sandbox).reset_dir(folder)
        check = harbor_of(task).config.environment.healthcheck
        if check is not None:
            healthcheck(self._container(sandbox), check, "[environment]")
        if task.steps:
            self._prepare_step(self._container(sandbox), 0)
        self._container(sandbox).mark_verifier_world()  # the task's own, before any agent

    def _prepare_step(self, box: Container, index: int) -> None:
        task = box.task
        h = harbor_of(task)
        step = h.steps[index]
        box.step = index
        box.spec = dataclasses.replace(box.spec, user=_user(h.user("agent", step)))
        box.set_network(h.network("agent", step))
        box.reset_dir(AGENT_LOGS)
        workdir = task.path / "steps" / step.name / "workdir"
        if workdir.is_dir():
            box.upload_dir(workdir, box.workdir, clear=False)
            if (workdir / "setup.sh").is_file():
                user = h.user("agent", step)
                res = box.run_as(["bash", f"{box.workdir.rstrip('/')}/setup.sh"],
                                 user=_user(user),
                                 env=box.command_env(), timeout=task.task_timeout())
                if res.returncode != 0 or res.timed_out:  # after an agent's step: its doing
                    raise ContainerStepError("step-setup", f"step {step.name!r}: setup.sh "
                                             f"failed (exit {res.returncode}): "
                                             f"{_tail(res.output)}")
        if step.healthcheck is not None:
            healthcheck(box, step.healthcheck, f"step {step.name!r}")

    @staticmethod
    def _container(sandbox: Workspace) -> Container:
        if not isinstance(sandbox, Container):
            raise SandboxError("a Harbor-format task needs the long-lived container sandbox")
        return sandbox

    # ----- scripts ------------------------------------------------------------------------

    def run_script(self, sandbox: Workspace, rel: str, *, timeout: float) -> ExecResult:
        box = self._container(sandbox)
        task = box.task
        if rel != "solution/solve.sh":
            raise SandboxError(f"a Harbor-format task has no {rel}")
        step = self._step(task, box.step)
        source = (task.path / "steps" / step.name / "solution" if step is not None
                  else task.path / "solution")
        if not (source / "solve.sh").is_file():
            raise SandboxError(f"no {source.relative_to(task.path)}/solve.sh")
        box.upload_dir(source, SOLUTION_DIR)
        env = box.command_env({**harbor_of(task).env("solution"), "TASK_DIR": SOLUTION_DIR})
        user = harbor_of(task).user("agent", step)
        return box.run_as(["bash", f"{SOLUTION_DIR}/solve.sh"],
                          user=_user(user), env=env, timeout=timeout)

    # ----- the verifier -------------------------------------------------------------------

    def verify(self, sandbox: Workspace, *, timeout: float,
               step: int | None = None) -> Verification:
        box = self._container(sandbox)
        task = box.task
        h = harbor_of(task)
        index = box.step if step is None else step
        hstep = self._step(task, index)
        left, services = box.end_phase()  # nothing the agent started runs now (but services)
        if changed := box.tampering():  # the verifier would run what the agent changed
            return Verification(ExecResult(-1, "", "", False, 0.0), False, _with_left(
                _tampering(changed), left, services), tampered=True)
        box.set_network(h.network("verifier", hstep))
        self._upload_tests(box, hstep)
        user = h.user("verifier", hstep)
        env = box.command_env({**h.env("verifier", hstep), "TASK_DIR": TESTS_DIR})
        box.run_as(["chmod", "+x", f"{TESTS_DIR}/test.sh"], user="0", env={}, timeout=30)
        run = box.run_as(["bash", "-c", f"({TESTS_DIR}/test.sh) > {TEST_STDOUT} 2>&1"],
                         user=_user(user), env=env, timeout=timeout)
        written = _reward_stamp(box)  # what the verifier left, as soon as it exited
        files = self._verifier_files(box)
        out = files.get("test-stdout.txt", "")
        res = ExecResult(run.returncode, out or run.stdout, run.stderr, run.timed_out,
                         run.duration_s)
        rewards, why = self._rewards(box)
        time.sleep(REREAD_S)
        tampered = _reward_stamp(box) != written  # and a moment later: the same?
        files.update(self._artifacts(box, hstep))  # after the rewards: nothing more to wait on
        if services:
            files = {**files, "(services kept running from the agent phase)": "\n".join(
                services)}
        verdict = judge(rewards, why, res)
        if tampered:  # the run ends here, failed, whatever step it was
            return Verification(res, False, _with_left(TAMPERED, left, services),
                                verdict.score, files or None, tampered=True)
        reason = _with_left(verdict.reason, left, services) if verdict.reason else None
        verdict = Verification(res, verdict.passed, reason, verdict.score, files or None)
        if not task.steps:
            return verdict
        return self._step_verdict(box, index, verdict)

    @staticmethod
    def _upload_tests(box: Container, hstep: HarborStep | None) -> None:
        """``/logs/verifier`` emptied; the task's tests, then the step's over them."""
        task = box.task
        box.reset_dir(VERIFIER_LOGS)
        if (task.path / "tests").is_dir():
            box.upload_dir(task.path / "tests", TESTS_DIR)
        else:
            box.reset_dir(TESTS_DIR)
        if hstep is not None and (steps_tests := task.path / "steps" / hstep.name / "tests"
                                  ).is_dir():
            box.upload_dir(steps_tests, TESTS_DIR, clear=False)

    def _step_verdict(self, box: Container, index: int,
                      verdict: Verification) -> Verification:
        """One step's verdict into the run's: recorded; the run's when it is the last step or
        the step missed its ``min_reward``; else the next step is prepared."""
        task = box.task
        h = harbor_of(task)
        hstep = h.steps[index]
        rewards = ({k: v for k, v in verdict.score.items() if isinstance(v, float)}
                   if verdict.score is not None else None)
        box.step_rewards.append((hstep.name, rewards))
        missed = min_reward_failure(rewards, hstep.min_reward)
        last = index + 1 >= len(h.steps)
        if not last and missed is None:
            try:
                self._prepare_step(box, index + 1)
            except Unhealthy as exc:  # the agent's steps so far left it unready: a failure
                missed = f"then {exc}"
            else:
                box.mark_verifier_world()  # what the verifier installed is its own
                return Verification(verdict.result, verdict.passed, verdict.reason,
                                    verdict.score, verdict.files, final=False)
        strategy = h.config.multi_step_reward_strategy or "mean"
        total = combine(box.step_rewards, strategy)
        run = judge(total, "no step wrote a reward", verdict.result)
        reason = run.reason
        if missed is not None:
            reason = f"step {hstep.name!r}: {missed}; " + (reason or "the run stopped there")
        score = {**(run.score or {}), "steps": {n: r for n, r in box.step_rewards},
                 "strategy": strategy}
        return Verification(verdict.result, run.passed and missed is None, reason, score,
                            verdict.files)

    def _rewards(self, box: Container) -> tuple[dict[str, float] | None, str]:
        """Harbor's reading: ``reward.json`` when it exists, else ``reward.txt``."""
        for path in (REWARD_JSON, REWARD_TXT):
            try:
                text = box.read_file(path, max_bytes=REWARD_LIMIT, truncate=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                return None, f"{path}: {exc.strerror or exc}"
            return parse_rewards(path, text)
        return None, f"no {REWARD_TXT} or {REWARD_JSON}"

    def _verifier_files(self, box: Container) -> dict[str, str]:
        """What the verifier left in ``/logs/verifier``, each file clipped."""
        listing = box.run_as(["sh", "-c", f"cd {VERIFIER_LOGS} && find . -type f | sort"],
                             user="0", env={}, timeout=30)
        files: dict[str, str] = {}
        for line in listing.stdout.splitlines()[:FILES_KEPT]:
            rel = line.removeprefix("./")
            if not rel or "\n" in rel:
                continue
            try:
                text = box.read_file(f"{VERIFIER_LOGS}/{rel}", max_bytes=FILE_CHARS * 4,
                                     truncate=True)
            except OSError:
                continue
            files[rel] = clip(text, FILE_CHARS)
        return files

    def _artifacts(self, box: Container, step: HarborStep | None) -> dict[str, str]:
        """What Harbor collects after each verify: the files of ``/logs/artifacts`` and of
        the task's (and the step's) ``artifacts``, each clipped, keyed ``artifacts/<path>``; a
        path that is not there is skipped, as Harbor skips it."""
        wanted = [HarborArtifact(source=ARTIFACTS_DIR, destination="/"),
                  *harbor_of(box.task).config.artifacts, *(step.artifacts if step else ())]
        files: dict[str, str] = {}
        for art in wanted:
            listing = box.run_as(["find", art.source, "-type", "f"], user="0", env={},
                                 timeout=30)
            for path in sorted(listing.stdout.splitlines()):
                if len(files) >= FILES_KEPT:
                    return files
                if not path.startswith(art.source) or "\n" in path:
                    continue
                rel = f"{art.name}/{path[len(art.source):].strip('/')}".strip("/")
                try:
                    text = box.read_file(path, max_bytes=FILE_CHARS * 4, truncate=True)
                except OSError:
                    continue
                files[f"artifacts/{rel}"] = clip(text, FILE_CHARS)
        return files


def _reward_stamp(box: Container) -> str:
    """The reward files as they are now: size, modification time (to the nanosecond where
    the image's ``stat`` says it), inode and checksum of each; a special file is not read.
    Read whole or not at all (:meth:`Container.probe`): an answer the engine lost or cut
    short is asked again, never taken for a changed reward (that would blame the agent for
    the engine's hiccup), and one it keeps losing is the engine's failure."""
    paths = (REWARD_JSON, REWARD_TXT)
    script = ("for f in " + " ".join(shlex.quote(p) for p in paths) +
              '; do if [ -f "$f" ]; then echo "$f $(stat -c \'%s %y %i\' "$f" 2>/dev/null) '
              '$(cksum < "$f")"; elif [ -e "$f" ] || [ -L "$f" ]; then echo "$f not a file"; '
              f'else echo "$f none"; fi; done; echo {STAMP_END}')
    return box.probe(script, step="reward-check", complete=lambda out: _whole(out, paths))


def _whole(out: str, paths: tuple[str, ...]) -> bool:
    """Whether a stamp's output is all there: one line per file, in order, then the end."""
    lines = out.splitlines()
    return (len(lines) == len(paths) + 1 and lines[-1] == STAMP_END
            and all(ln.startswith(f"{p} ") for ln, p in zip(lines, paths, strict=False)))


def _tampering(found: list[str], shown: int = 5) -> str:
    """A tampered run's reason: the paths, the first few named."""
    more = f" and {len(found) - shown} more" if len(found) > shown else ""
    return (f"tampering: what the verifier executes or is configured by was changed before "
            f"it ran, so it did not run: {'; '.join(found[:shown])}{more}")


def _with_left(reason: str, left: list[str], services: list[str]) -> str:
    """A failing run's reason, with what the agent phase left running (stopped) or kept."""
    if left:
        reason += (f"; the agent phase left {len(left)} process{'es' if len(left) > 1 else ''} "
                   f"running, stopped before the verifier (the gate's phase boundary stops "
                   f"every process the agent phase started): {'; '.join(left[:3])}")
    if services:
        reason += (f"; reward unprotected ([suite].reward_unprotected): services kept running "
                   f"into the verifier: {'; '.join(services[:3])}")
    return reason


def parse_rewards(path: str, text: str) -> tuple[dict[str, float] | None, str]:
    """Rewards from one reward file, as Harbor's verifier parses it."""
    if not text.strip():
        return None, f"{path} is empty"
    if path == REWARD_TXT:
        try:
            value = float(text.strip())
        except ValueError:
            return None, f"{path} holds no number"
        return ({"reward": value}, "") if math.isfinite(value) else (None, f"{path}: not finite")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None, f"{path} is not JSON"
    if not isinstance(data, dict):
        return None, f"{path} is not a JSON object"
    if (problem := json_problem(data)) is not None:  # held to what a results file is held to
        return None, f"{path}: {problem}"
    rewards = {str(k): float(v) for k, v in data.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    return (rewards, "") if rewards else (None, f"{path} has no numeric reward")


def judge(rewards: dict[str, float] | None, why: str, res: ExecResult) -> Verification:
    """The gate's verdict from Harbor's rewards (the module docstring's *Pass*)."""
    if not rewards:
        return Verification(res, False, reason=(
            f"the verifier wrote no reward ({why}); test.sh exited {res.returncode}: "
            f"{_tail(res.output)}"))
    score: dict[str, Any] = dict(rewards)
    short = {"reward": rewards["reward"]} if "reward" in rewards else rewards
    below = {k: v for k, v in short.items() if v < 1}
    if not below:
        return Verification(res, True, score=score)
    said = ", ".join(f"{k} {v:g}" for k, v in sorted(below.items()))
    return Verification(res, False, reason=f"{said} (the task passes at 1)", score=score)


def min_reward_failure(rewards: dict[str, float] | None,
                       threshold: float | dict[str, float] | None) -> str | None:
    """Harbor's ``MultiStepTrial._min_reward_failure``: why a step misses its threshold."""
    if threshold is None:
        return None
    wanted = {"reward": threshold} if isinstance(threshold, (int, float)) else threshold
    for key, floor in wanted.items():
        actual = (rewards or {}).get(key, float("-inf"))
        if actual < floor:
            return f"{key}={actual:g} below min_reward {floor:g}"
    return None


def combine(per_step: list[tuple[str, dict[str, float] | None]],
            strategy: str) -> dict[str, float] | None:
    """Harbor's ``_select_multi_step_reward``: the final step's rewards, or the per-key mean
    over the steps that have rewards (a key a step lacks counts 0)."""
    if strategy == "final":
        return per_step[-1][1] if per_step else None
    valid = [r for _, r in per_step if r is not None]
    keys = {k for r in valid for k in r}
    if not keys:
        return None
    return {k: sum(r.get(k, 0.0) for r in valid) / len(valid) for k in sorted(keys)}


FORMAT = HarborFormat()
