"""The simulated model: recognises a suite task, then solves it (or fails) through a shell tool.

The server keeps no conversation state. Everything comes from the request: the task from the
first user message (a task's ``task.md`` text, whitespace-normalised, appears in it), the turn
from how many assistant messages the history holds, and the episode from the simulator's own
``tool_use`` ids (``toolu_sim_<episode>_<step>_<nonce>``, the step of its plan: the turn, less
any retry of a command sh refused, ``_shell.py``; the nonce is random, so no two answers share
an id, as the API's never do), which every later request carries back.
A new episode (turn 0 with a shell tool) takes the next number for its (task, model).

An episode's outcome is ``decide_outcome(seed, model, task, difficulty, episode)``: one uniform
draw ``u`` per episode; ``u < pass_rate(model, difficulty)`` → the model sets out to solve it.
Otherwise it fails in one of three realistic ways (shares of the remaining probability):
give up early with an apology (30 %), apply a partial or wrong fix and claim success (40 %), or
keep re-reading files until it runs out of turns (30 %). Because every model uses the same draw,
a stronger model solves every episode a weaker one solves (for the same seed), so pass rates
order by strength. The simulator never decides pass/fail: the task's ``verify.sh`` does.

A solving episode takes ``TURNS[difficulty]`` requests (easy 4, medium 6, hard 9): look around
(``ls``/``find``/``cat`` of files the task mentions or ships), act (the steps of
``solution/solve.sh``, split at blank lines, grouped to fit), check (the task's test command, or
``ls``), then a final answer that quotes the output of the act steps, so answer-style tasks
verified from ``.runner/final.txt`` pass (and, when the prompt names a command that ends
the episode, such as mini-swe-agent's ``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``, that
command as a tool call with it: ``_submit.py``). An agent whose ``max_turns`` is below that fails.

An act whose tool call does not fit in one answer of the request's ``max_tokens`` (a 100 KB
solution) is written in parts, as a model would: one tool call per turn appends the next lines
of the command to a file under ``$TMPDIR`` (a heredoc of whole lines; a line longer than an
answer, in ``printf`` pieces), each call under ``max_tokens``, then one more turn runs what was
written in the tool's shell (``eval``, as the command itself would have run) and removes the
file (:func:`in_parts`). The episode costs those extra turns, like a real model's.

A Harbor task's oracle is ``bash /solution/solve.sh`` in one process (Harbor uploads
``solution/`` to ``/solution`` for the oracle only; an agent never sees it), so its steps are
not independent: a ``cd``, a variable or a function carries over, and the script may read its
own siblings in ``/solution``. Its solving episode therefore acts once, with the whole script:
the simulator, which runs in the gate and reads the task's files from the suite directory,
sends the script's *content* as a heredoc in the tool call (and any other file of
``solution/``, packed), writes it to ``/solution`` (or a fresh directory when that is not
writable) and runs it there with ``TASK_DIR`` and the task's ``[solution].env``, as the oracle
does. Nothing of ``solution/`` reaches a real agent: only the simulated model's own commands
carry it. A multi-step task is known by each step's instruction, and each step is solved with
that step's ``solve.sh`` (:meth:`gate.core.tasks.Task.for_step`).

Skills. A task's ``metadata.json`` may name its ``target_skill``. When the request's system
prompt lists that skill (the path of its ``SKILL.md``, ``…/skills/<name>/SKILL.md``; or its
name in an ``<available_skills>`` list, then at ``.claude/skills/<name>/SKILL.md``), the model
first reads that ``SKILL.md`` with the shell tool (turn 0, whatever the outcome). The skill
*works* only when that read returned its text (front matter with ``name: <target>``) and the
text does not hold :data:`NO_EFFECT_MARKER`; then the chance of solving rises — the same draw
``u`` against ``p + (1 - p) * SKILL_LIFT``, so every episode solved without the skill is solved
with it — and its read replaces the look phase (the skill says how to go about the task), so a
solved episode takes fewer turns whenever the task has more than one look. A skill that is
not the task's target is never read and changes nothing but the prompt's length; a listed
target that does not work costs its read turn and helps nothing.
"""

from __future__ import annotations

import base64
import hashlib
import io
import random
import re
import secrets
import shlex
import subprocess
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.core.skills import NO_EFFECT_MARKER
from gate.core.tasks import Task
from gate.secrets import scrubbed_env
from gate.sim._families import normalise, pass_rate
from gate.sim._parts import answer_tokens, delimiter, parts_of
from gate.sim._shell import RETRY_MARK, retries, through_bash
from gate.sim._submit import submit_command
from gate.sim._tokens import block_tokens

TURNS: dict[str, int] = {"easy": 4, "medium": 6, "hard": 9}
MAX_ACT_TURNS: dict[str, int] = {"easy": 1, "medium": 2, "hard": 4}
FAILURE_SHARES = (("give_up", 0.3), ("partial", 0.4), ("loop", 0.3))
LOOP_LIMIT = 60
_SHELL_NAMES = {"bash", "shell", "sh", "terminal", "run_command", "execute_command",
                "run_shell_command", "exec", "execute", "run"}
_TOOL_ID = re.compile(r"^toolu_sim_(\d+)_(\d+)_")
#: the header the gate's meter names the run with (``<task>-r<replication>``), simulator only
RUN_HEADER = "x-gate-run"
_RUN_NAME = re.compile(r".+-r(\d{1,9})")
EPISODE_STRIDE = 1_000_000_000
_MENTIONED_PATH = re.compile(r"`([\w][\w./-]*\.[A-Za-z0-9]+)`")
_REPORT_LINE = re.compile(r"^\s*(echo|printf)\b")
_NO_OUTPUT = re.compile(r"^\(.*no output.*\)$", re.IGNORECASE)  # agents' "(no output)" notes
#: the share of the episodes failing without it that a working target skill turns into solves
SKILL_LIFT = 0.75


@dataclass(frozen=True)
class Action:
    """One model turn: a tool call (with a short preface) or the final text answer."""

    phase: str  # look | act | check | final
    text: str
    command: str | None = None


@dataclass
class Reply:
    """What the model says to one request, before ``max_tokens`` is applied."""

    content: list[dict[str, Any]]
    stop_reason: str
    task: str | None = None
    episode: int | None = None
    turn: int = 0
    outcome: str | None = None


def decide_outcome(seed: int, model: str, task_id: str, difficulty: str | None,
                   episode: int, lift: float = 0.0) -> str:
    """``solve`` / ``give_up`` / ``partial`` / ``loop`` for one episode; pure and seeded.
    ``lift`` (a working skill) turns that share of the would-be failures into solves."""
    u = random.Random(f"outcome\0{seed}\0{task_id}\0{episode}").random()
    p = pass_rate(model, difficulty)
    p = p + (1.0 - p) * lift
    if p >= 1.0:
        return "solve"
    if u < p:
        return "solve"
    v = (u - p) / (1.0 - p)
    acc = 0.0
    for kind, share in FAILURE_SHARES:
        acc += share
        if v < acc:
            return kind
    return FAILURE_SHARES[-1][0]


def split_solution(script: str) -> tuple[str, list[str]]:
    """``solve.sh`` as (preamble, steps): ``set``/``shopt`` lines lead every step; steps are
    separated by blank lines, merged until each one parses on its own (``bash -n``), so a
    heredoc with blank lines stays whole."""
    lines = script.splitlines()
    preamble: list[str] = []
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if not s or s.startswith("#"):
            i += 1
        elif re.match(r"(set|shopt)\s", s):
            preamble.append(s)
            i += 1
        else:
            break
    chunks: list[list[str]] = [[]]
    for line in lines[i:]:
        if line.strip():
            chunks[-1].append(line)
        elif chunks[-1]:
            chunks.append([])
    steps: list[str] = []
    pending = ""
    for chunk in chunks:
        if not chunk:
            continue
        pending = f"{pending}\n\n" + "\n".join(chunk) if pending else "\n".join(chunk)
        only_comments = all(ln.strip().startswith("#") for ln in pending.splitlines())
        if not only_comments and _parses(pending):
            steps.append(pending)
            pending = ""
    if pending:
        steps.append(pending)
    return "\n".join(preamble), steps


def _parses(code: str) -> bool:
    try:
        # scrubbed: runs take turns while tasks run, which may read any process's environment
        res = subprocess.run(["bash", "-n"], input=code.encode(), capture_output=True,
                             timeout=10, check=False, env=scrubbed_env())
    except (OSError, subprocess.TimeoutExpired):
        return True
    # an unterminated heredoc is only a warning to bash -n, but it means "not whole yet"
    return res.returncode == 0 and not res.stderr.strip()


def _is_report(step: str) -> bool:
    """A step that only prints (``echo``/``printf``) changes nothing."""
    body = [ln for ln in step.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return bool(body) and all(_REPORT_LINE.match(ln) for ln in body)


def _group(steps: list[str], n: int) -> list[str]:
    """``steps`` joined into ``n`` consecutive groups of near-equal size."""
    if not steps:
        return []
    n = max(1, min(n, len(steps)))
    size, extra = divmod(len(steps), n)
    out, k = [], 0
    for g in range(n):
        take = size + (1 if g < extra else 0)
        out.append("\n\n".join(steps[k:k + take]))
        k += take
    return out


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def whole_solution(task: Task) -> str | None:
    """For a task whose reference solution runs whole from its own folder (its format says
    so: :attr:`Task.solution_env`, Harbor's oracle): one shell command that runs
    ``solution/solve.sh`` so (in one process, from the solution directory, with ``TASK_DIR``
    and the solution's variables), carrying the script's content, not a path in the
    container."""
    script = task.solution_script
    if task.solution_env is None or script is None:
        return None
    body = script.read_text(encoding="utf-8", errors="replace")
    if not body.endswith("\n"):
        body += "\n"
    lines = ['d=/solution',
             'mkdir -p "$d" 2>/dev/null && [ -w "$d" ] || d=$(mktemp -d)']
    others = sorted(p for p in script.parent.rglob("*")
                    if p.is_file() and p != script and "__pycache__" not in p.parts)
    if others:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for p in others:
                tf.add(p, arcname=p.relative_to(script.parent).as_posix(), recursive=False)
        packed = base64.encodebytes(buf.getvalue()).decode("ascii")
        end = delimiter(packed, "GATE_SIM_FILES")
        lines.append(f"base64 -d <<'{end}' | tar -xzf - -C \"$d\"\n{packed}{end}")
    end = delimiter(body, "GATE_SIM_SOLVE")
    lines.append(f"cat > \"$d/solve.sh\" <<'{end}'\n{body}{end}")
    env = "".join(f"export {k}={shlex.quote(v)}; " for k, v in task.solution_env.items()
                  if _ENV_NAME.match(k))
    lines.append(f'(export TASK_DIR="$d"; {env}bash "$d/solve.sh")')
    return "\n".join(lines)


@dataclass(frozen=True)
class TaskScript:
    """The moves the model knows for one task, derived from its files (computed once)."""

    task: Task
    looks: tuple[str, ...]
    preamble: str
    steps: tuple[str, ...]
    check: str
    mentioned: tuple[str, ...]
    whole: str | None = None  # a Harbor task's solve.sh as one command (see the docstring)

    @classmethod
    def of(cls, task: Task) -> TaskScript:
        mentioned = tuple(dict.fromkeys(_MENTIONED_PATH.findall(task.prompt)))
        shipped: list[str] = []
        if task.starting_dir:
            shipped = sorted(p.relative_to(task.starting_dir).as_posix()
                             for p in task.starting_dir.rglob("*")
                             if p.is_file() and p.stat().st_size < 20_000
                             and "__pycache__" not in p.parts and p.name != "__init__.py")
        readable = list(dict.fromkeys([*mentioned, *shipped]))
        looks = ["ls -la", "find . -type f -not -path '*/.*' | sort | head -50",
                 *[f"cat {shlex.quote(f)}" for f in readable[:6]]]
        preamble, steps = "", list[str]()
        if task.solution_script:
            preamble, steps = split_solution(task.solution_script.read_text(encoding="utf-8"))
        prompt = task.prompt.lower()
        if "pytest" in prompt:
            check = "timeout 120 python3 -m pytest -q 2>&1 | tail -n 15"
        elif "unittest" in prompt:
            check = "timeout 120 python3 -m unittest 2>&1 | tail -n 15"
        else:
            check = "ls -la"
        return cls(task, tuple(looks), preamble, tuple(steps), check, mentioned,
                   whole_solution(task))

    def command(self, step: str) -> str:
        return f"{self.preamble}\n{step}" if self.preamble else step

    def plan(self, outcome: str, rng: random.Random, skill: SkillUse | None = None) -> list[Action]:
        """The episode's turns, in order; the final answer is added by the caller. With the
        task's target ``skill`` offered, its read comes first; a working one cuts the looks."""
        lead = [Action("skill", f"This matches the {skill.name} skill; let me read it first.",
                       f"cat {shlex.quote(skill.path)}")] if skill else []
        return [*lead, *self._plan(outcome, rng, short=bool(skill and skill.works))]

    def _plan(self, outcome: str, rng: random.Random, short: bool) -> list[Action]:
        diff = self.task.difficulty or "medium"
        total = TURNS.get(diff, TURNS["medium"])
        acts = [self.whole] if self.whole else [
            self.command(a) for a in _group(list(self.steps), MAX_ACT_TURNS.get(diff, 2))]
        n_looks = 0 if short else max(1, total - 2 - len(acts))  # a working skill: no looks
        looks = [Action("look", _look_text(i), self.looks[i % len(self.looks)])
                 for i in range(n_looks)]
        check = Action("check", "Let me check that it works now.", self.check)
        if outcome == "solve":
            return [*looks, *[Action("act", _act_text(i), a) for i, a in enumerate(acts)], check]
        if outcome == "give_up":
            return looks[: max(1, rng.randint(1, max(1, len(looks))))]
        if outcome == "partial":
            fixes = [s for s in self.steps if not _is_report(s)]
            k = rng.randint(0, max(0, len(fixes) - 1)) if len(fixes) > 1 else 0
            applied = [Action("act", _act_text(i), self.command(s))
                       for i, s in enumerate(fixes[:k])]
            if not applied:
                applied = [Action("act", "I'll make the change now.", self._wrong_fix())]
            return [*looks, *applied, check]
        return []  # loop: generated turn by turn

    def _wrong_fix(self) -> str:
        """An edit that looks like work but fixes nothing (a comment in the first named file)."""
        for f in self.mentioned:
            if f.endswith((".py", ".sh", ".rb", ".toml", ".yaml", ".yml")) and "test" not in f:
                return (f"printf '\\n# handle the edge case described in the issue\\n' >> "
                        f"{shlex.quote(f)}")
        return "echo 'applied the change'"


@dataclass(frozen=True)
class SkillUse:
    """The task's target skill as offered in a request: where its SKILL.md is, and whether
    the model's read of it (turn 0 of the episode) shows a skill that works."""

    name: str
    path: str
    works: bool


def target_skill(task: Task) -> str | None:
    name = task.metadata.get("target_skill")
    return name if isinstance(name, str) and name and name != "none" else None


def offered_skill(request: dict[str, Any], task: Task) -> tuple[str, str] | None:
    """(name, SKILL.md path) of the task's target skill when the system prompt lists it."""
    name = target_skill(task)
    if name is None:
        return None
    system = _text_of(request.get("system"))
    found = re.search(rf"[\w./~-]*skills/{re.escape(name)}/SKILL\.md", system)
    if found:
        return name, found.group(0)
    if re.search(rf"<name>\s*{re.escape(name)}\s*</name>", system):
        return name, f".claude/skills/{name}/SKILL.md"
    return None


def skill_works(read: list[str], name: str) -> bool:
    """The read of a SKILL.md returned that skill's text, without the no-effect marker."""
    text = "\n".join(read)
    return (re.search(rf"(?m)^name:\s*['\"]?{re.escape(name)}['\"]?\s*$", text) is not None
            and NO_EFFECT_MARKER not in text)


def tool_id_stem(seed: int, task_id: str, episode: int, model: str) -> str:
    """A short name unique to one episode (the file its parts are written to)."""
    return hashlib.sha256(f"{seed}\0{task_id}\0{episode}\0{model}".encode()).hexdigest()[:12]


def in_parts(plan: list[Action], tool: str, max_tokens: int, stem: str) -> list[Action]:
    """``plan`` with each act too large for one answer of ``max_tokens`` written over several
    turns (the module docstring); every other action, and a plan that fits, unchanged."""
    out: list[Action] = []
    for i, action in enumerate(plan):
        cmd = action.command
        if cmd is None or max_tokens <= 0 or answer_tokens(action.text, tool, cmd) <= max_tokens:
            out.append(action)
            continue
        path = f'f="${{TMPDIR:-/tmp}}/gate-sim-{stem}-{i}.sh"; '
        parts = parts_of(cmd, tool, max_tokens, path)
        if parts is None:  # no room to write anything: the answer is cut, as before
            out.append(action)
            continue
        n = len(parts)
        out += [Action(action.phase, f"This is long, so I'll write it to a file in parts "
                       f"({k + 1} of {n}).", part) for k, part in enumerate(parts)]
        out.append(Action(action.phase, "Now I'll run what I wrote.",
                          path + 's=$(cat "$f") && rm -f "$f" && eval "$s"'))
    return out


def _look_text(i: int) -> str:
    return ["I'll start by looking at the project layout.", "Let me see which files are here.",
            "Let me read the relevant code."][min(i, 2)]


def _act_text(i: int) -> str:
    return "Now I'll apply the fix." if i == 0 else "Continuing with the next part of the fix."


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict):
                if b.get("type") == "text":
                    parts.append(str(b.get("text", "")))
                elif b.get("type") == "tool_result":
                    parts.append(_text_of(b.get("content")))
    return "\n".join(parts)


def _squash(text: str) -> str:
    return " ".join(text.split())


def shell_tool(request: dict[str, Any]) -> str | None:
    """The name of a shell-like tool the request offers, if any (``tool_choice: none`` → none)."""
    tc = request.get("tool_choice")
    if isinstance(tc, dict) and tc.get("type") == "none":
        return None
    for tool in request.get("tools") or []:
        name = str(tool.get("name", ""))
        kind = str(tool.get("type", ""))
        if kind.startswith("bash_"):
            return name
        props = (tool.get("input_schema") or {}).get("properties") or {}
        cmd = props.get("command") if isinstance(props, dict) else None
        named = name.lower() in _SHELL_NAMES or "bash" in name.lower() or "shell" in name.lower()
        if named and isinstance(cmd, dict) and cmd.get("type") == "string":
            return name
    return None


class SimModel:
    """Answers Messages API requests as the simulated model; thread-safe."""

    def __init__(self, tasks: list[Task], seed: int = 0) -> None:
        self.seed = seed
        # a multi-step task is known by each step's instruction, solved by that step's solution
        known = [s for t in tasks for s in
                 ([t.for_step(i) for i in range(len(t.steps))] if t.steps else [t])]
        self._tasks = sorted(known, key=lambda t: -len(t.prompt))
        self._prompts = {(t.id, t.step): _squash(t.prompt) for t in known}
        self._scripts: dict[tuple[str, int | None], TaskScript] = {}
        self._episodes: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def recognise(self, request: dict[str, Any]) -> Task | None:
        """The suite task whose ``task.md`` appears in the first user message."""
        first = next((m for m in request.get("messages") or [] if m.get("role") == "user"), None)
        if first is None:
            return None
        text = _squash(_text_of(first.get("content")))
        for t in self._tasks:
            prompt = self._prompts[(t.id, t.step)]
            if prompt and prompt in text:
                return t
        return None

    def script(self, task: Task) -> TaskScript:
        with self._lock:
            known = self._scripts.get((task.id, task.step))
        if known is None:  # built outside the lock: it runs `bash -n`, other tasks need not wait
            built = TaskScript.of(task)
            with self._lock:
                known = self._scripts.setdefault((task.id, task.step), built)
        return known

    def _new_episode(self, task_id: str, model: str, run: str | None = None) -> int:
        """The episode a new conversation starts. Named by the gate's meter (``run``, e.g.
        ``fix-bug-r3``), it derives from the run's replication alone — the k-th conversation
        of replication r is episode ``r + k * EPISODE_STRIDE`` — so a run's outcome does not
        depend on which runs came before it (a resumed or sharded run replays the same
        episodes). Unnamed (a client talking to ``gate sim serve``), episodes count up."""
        named = _RUN_NAME.fullmatch(run or "")
        with self._lock:
            key = (run or "" if named else "", task_id, normalise(model))
            n = self._episodes.get(key, 0)
            self._episodes[key] = n + 1
        return int(named.group(1)) + n * EPISODE_STRIDE if named else n

    def reply(self, request: dict[str, Any], run: str | None = None) -> Reply:
        task = self.recognise(request)
        if task is None:
            return Reply([{"type": "text", "text": _generic_answer(request)}], "end_turn")
        tool = shell_tool(request)
        if tool is None:
            text = (f"I can't work on this here: no shell tool (such as `bash` with a `command` "
                    f"input) is available to me, so I cannot look at the files, run commands or "
                    f"make the change for task {task.id}.")
            return Reply([{"type": "text", "text": text}], "end_turn", task=task.id)
        messages = request.get("messages") or []
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        episode = _episode_in(messages)
        if episode is None:
            episode = (self._new_episode(task.id, str(request["model"]), run) if turn == 0
                       else 0)
        model = str(request["model"])
        skill: SkillUse | None = None
        if (offer := offered_skill(request, task)) is not None:
            works = turn > 0 and skill_works(_tool_outputs(messages, {0}, episode), offer[0])
            skill = SkillUse(offer[0], offer[1], works)
        outcome = decide_outcome(self.seed, model, task.id, task.difficulty, episode,
                                 lift=SKILL_LIFT if skill and skill.works else 0.0)
        script = self.script(task)
        rng = random.Random(f"plan\0{self.seed}\0{task.id}\0{episode}")
        plan = in_parts(script.plan(outcome, rng, skill), tool,
                        int(request.get("max_tokens") or 0), tool_id_stem(
                            self.seed, task.id, episode, model))
        done, again = retries(messages, episode)  # a shell that is sh, not bash: _shell.py
        step = turn - done  # the plan's step this turn takes
        if again and 0 < step <= len(plan):
            step -= 1
            action: Action | None = Action(
                plan[step].phase, "That shell is sh, not bash: I'll run it again with bash.",
                through_bash(str(plan[step].command)))
        elif outcome == "loop":  # after the skill's read, if any: re-reading until out of turns
            action = plan[step] if step < len(plan) else (
                Action("look", "Let me re-read that to be sure.",
                       script.looks[step % len(script.looks)]) if step < LOOP_LIMIT else None)
        else:
            action = plan[step] if step < len(plan) else None
        if action is not None and done and not again and action.phase == "act":
            action = Action(action.phase, action.text, through_bash(str(action.command)))
        base = Reply([], "end_turn", task=task.id, episode=episode, turn=turn, outcome=outcome)
        if action is None:
            final = _final_text(outcome, plan, messages, episode)
            submit = submit_command(request)  # an agent that ends on a command (_submit.py)
            if submit is None:
                base.content = [{"type": "text", "text": final}]
                return base
            action = Action("final", final, submit)
        # unique to this answer, as the API's ids are: two runs that play the same episode (a
        # same-job A/B's arms, one seed) are different conversations after their first answer,
        # so neither reads the other's cached turns (who went first would decide the cost)
        mark = RETRY_MARK if again else ""
        tool_id = f"toolu_sim_{episode}_{step}_{mark}{secrets.token_hex(6)}"
        base.content = [{"type": "text", "text": action.text},
                        {"type": "tool_use", "id": tool_id, "name": tool,
                         "input": {"command": action.command}}]
        base.stop_reason = "tool_use"
        return base


def _episode_in(messages: list[dict[str, Any]]) -> int | None:
    for m in messages:
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                match = _TOOL_ID.match(str(b.get("id", "")))
                if match:
                    return int(match.group(1))
    return None


def _tool_outputs(messages: list[dict[str, Any]], turns: set[int], episode: int) -> list[str]:
    """The tool results of this episode's given turns, in order."""
    out: list[str] = []
    for m in messages:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if not isinstance(b, dict) or b.get("type") != "tool_result":
                continue
            match = _TOOL_ID.match(str(b.get("tool_use_id", "")))
            if match and int(match.group(1)) == episode and int(match.group(2)) in turns:
                text = _text_of(b.get("content")).strip()
                if text and not _NO_OUTPUT.match(text):
                    out.append(text)
    return out


def _final_text(outcome: str, plan: list[Action], messages: list[dict[str, Any]],
                episode: int) -> str:
    if outcome == "give_up":
        return ("I'm sorry — I looked through the code but couldn't work out a safe fix for "
                "this, so I've left the files unchanged.")
    if outcome == "loop":
        return "I'm still reading through the files and haven't made any changes yet."
    act_turns = {i for i, a in enumerate(plan) if a.phase == "act"}
    outputs = _tool_outputs(messages, act_turns, episode)
    if outcome == "partial":
        return "I've fixed the issue; the change is in place."
    found = "\n".join(outputs)
    if found:
        return f"{found}\n\nDone: I applied the fix and checked the result."
    return "Done: I applied the fix and checked the result."


def _generic_answer(request: dict[str, Any]) -> str:
    """A plain answer for prompts that are not suite tasks (titles, quota checks, chat)."""
    messages = request.get("messages") or []
    last = _squash(_text_of(messages[-1].get("content"))) if messages else ""
    system = _squash(_text_of(request.get("system")))
    if "title" in (system + " " + last).lower():
        return "Simulated session"
    words = len(last.split())
    return (f"Hello! I'm the agent-gate simulator, a stand-in for a real Claude model, so I can "
            f"only work on the tasks of the suite I was started with. I read your message "
            f"({words} words) but it isn't one of those tasks, so I have nothing more to add.")


def output_tokens(content: list[dict[str, Any]]) -> int:
    """Tokens of the answer, by the same estimate as the prompt."""
    return sum(block_tokens(b) for b in content)


def fit_max_tokens(content: list[dict[str, Any]], stop_reason: str,
                   max_tokens: int) -> tuple[list[dict[str, Any]], str, int]:
    """Cut the answer to ``max_tokens`` like the API: text truncated, a tool call that does not
    fit dropped, ``stop_reason`` becomes ``max_tokens``. Returns (content, stop, output tokens)."""
    used = 0
    out: list[dict[str, Any]] = []
    for b in content:
        cost = block_tokens(b)
        if used + cost <= max_tokens:
            out.append(b)
            used += cost
            continue
        room = max_tokens - used
        if b.get("type") == "text" and room > 0:
            cut = str(b["text"]).encode("utf-8")[: room * 4].decode("utf-8", "ignore")
            out.append({"type": "text", "text": cut})
        return out, "max_tokens", max_tokens
    return out, stop_reason, max(used, 1)


def apply_stop_sequences(content: list[dict[str, Any]], stop_reason: str,
                         stops: Any) -> tuple[list[dict[str, Any]], str, str | None]:
    """Cut the answer at the first of the request's ``stop_sequences``, like the API (the
    sequence itself is not included). Returns (content, stop_reason, matched sequence)."""
    wanted = [s for s in stops if isinstance(s, str) and s] if isinstance(stops, list) else []
    if not wanted:
        return content, stop_reason, None
    for i, block in enumerate(content):
        if block.get("type") != "text":
            continue
        text = str(block.get("text", ""))
        hits = [(text.find(s), s) for s in wanted if s in text]
        if hits:
            at, seq = min(hits)
            return [*content[:i], {"type": "text", "text": text[:at]}], "stop_sequence", seq
    return content, stop_reason, None


def load_tasks(tasks_dir: Path | None) -> list[Task]:
    """The suite the model knows; none when no directory is given."""
    if tasks_dir is None:
        return []
    from gate.core.tasks import load_suite

    return list(load_suite(tasks_dir).tasks)
