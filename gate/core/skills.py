"""Agent Skills: folders with a ``SKILL.md``, loaded from ``[agent].skills``; and conditions.

A skill is a subfolder of the skills directory holding ``SKILL.md``, whose YAML front matter
names it (``name``, the folder's own name) and says when to use it (``description``), plus
any files it ships (scripts, references). Skills are part of the agent under test; a run puts
the skills of its *condition* into the workspace at ``.claude/skills/<name>/`` (where Claude
Code looks for project skills) and nowhere else; a Harbor task's run puts them into the agent
user's own ``~/.claude/skills/`` instead, as Harbor does (the task's working directory is the
task's: its verifier may list it).

A task may ship skills itself (a Harbor / SkillsBench task's ``environment/skills/``,
which its Dockerfile copies into the image): they are skills like any other here, offered to
the agent in a run without conditions and switched by the conditions (a run under a condition
has every skill it does not get removed from each folder a skill-loading agent reads). They are
read as the agent reads them (:func:`load_shipped_skill`: a name that is not the folder's, or
none, does not drop one), and one that cannot be honoured is named in the run's notes.

Conditions say which skills a run gets. The standard set comes from each task's
``metadata.json`` (the effectiveness-benchmark layout: ``target_skill``, ``irrelevant_skill``):

- ``control``: no skills; ``full``: every skill of the suite's set;
- ``target``: the task's target skill; ``negative``: its irrelevant skill;
- ``target_plus_one``: the target and one other skill, chosen deterministically (see
  :func:`other_skill`); ``target_plus_unrelated``: the target and the irrelevant one.

A task whose target is ``"none"`` (or missing) gets none of the target conditions, one whose
irrelevant skill is ``"none"`` (or missing) no ``negative`` / ``target_plus_unrelated``: a
negative control (``"none"`` / ``"none"``) runs only ``control`` and ``full``. Named overlays
from ``gate.toml`` (``[conditions.<name>] skills = [...]``) apply to every task.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gate._files import PROMPT_LIMIT, MiB, printable, read_text
from gate.core.config import SKILL_NAME_PATTERN  # the Agent Skills rules for a name
from gate.core.tasks import Task, digest_dir
from gate.errors import BadInput

if TYPE_CHECKING:
    from gate.core.config import ConditionConfig, GateConfig

#: where skills go in a workspace (relative to its root), as Claude Code looks for them
SKILLS_DIR = ".claude/skills"
SKILL_FILE = "SKILL.md"
_SKILL_NAME = re.compile(SKILL_NAME_PATTERN)
#: a task's own skill may be named more loosely (SkillsBench ships ``image_editing``): what
#: the agent loads, and still safe in a path, a prompt's markup and a report
_SHIPPED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DESCRIPTION_LIMIT = 1024  # characters, as the Agent Skills rules say
_XML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
#: a skill is copied into every workspace of its runs: bounded in bytes and files
SKILL_BYTES_LIMIT = 16 * MiB
SKILL_FILES_LIMIT = 500
_IGNORED = {"__pycache__", ".DS_Store", ".git"}

CONTROL, TARGET, NEGATIVE, FULL = "control", "target", "negative", "full"
TARGET_PLUS_ONE, TARGET_PLUS_UNRELATED = "target_plus_one", "target_plus_unrelated"
STANDARD_CONDITIONS = (CONTROL, TARGET, NEGATIVE, FULL, TARGET_PLUS_ONE, TARGET_PLUS_UNRELATED)
NO_SKILL = "none"
#: in a SKILL.md, this makes the simulator treat the skill as useless (a test's "broken" skill):
#: one of the few things about a skill the simulator reads (gate/sim/_model.py)
NO_EFFECT_MARKER = "<!-- sim: no-effect -->"


@dataclass(frozen=True)
class Skill:
    """One loaded skill: its folder, the front matter's name and description, a digest of
    every file in it (renames, edits and executable bits all show)."""

    name: str
    description: str
    path: Path
    digest: str
    #: where the sandbox put its ``SKILL.md`` (an absolute path: a Harbor task's skills are in
    #: the agent user's ``~/.claude/skills``); ``None``: in the workspace (:attr:`workspace_path`)
    location: str | None = None

    @property
    def folder(self) -> str:
        """The folder it is installed as: its own folder's name (a task's own skill keeps the
        folder it ships in, whatever its front matter names it, as every agent finds it)."""
        return self.path.name

    @property
    def workspace_path(self) -> str:
        """Where its ``SKILL.md`` is: relative to the workspace's root, or where the sandbox
        installed it (:attr:`location`)."""
        return self.location or f"{SKILLS_DIR}/{self.folder}/{SKILL_FILE}"


def _front_matter(text: str, where: Path) -> dict[str, Any]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise BadInput(f"{where}: no YAML front matter (the file must start with a '---' line, "
                       "then name: and description:, then '---')")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise BadInput(f"{where}: the YAML front matter is not closed by a '---' line")
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 2}" if mark is not None else ""
        raise BadInput(f"{where}: the front matter is not valid YAML{at}") from None
    except RecursionError:
        raise BadInput(f"{where}: the front matter is nested too deeply") from None
    if not isinstance(data, dict):
        raise BadInput(f"{where}: the front matter must be a YAML mapping (name:, description:)")
    return data


def _check_files(folder: Path) -> None:
    """Regular files and folders only (a symlink could carry a host file into a workspace),
    within the skill's byte and file limits."""
    total = count = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED)
        for name in (*dirnames, *filenames):
            if name in _IGNORED:
                continue
            p = Path(dirpath) / name
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                raise BadInput(f"{printable(str(p))}: a symlink (a skill's files are copied "
                               "into the workspace; a link could point outside it)")
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                raise BadInput(f"{printable(str(p))}: not a regular file")
            total += st.st_size
            count += 1
    if total > SKILL_BYTES_LIMIT:
        raise BadInput(f"{folder}: the skill's files are too large ({total / MiB:.1f} MiB; "
                       f"the limit is {SKILL_BYTES_LIMIT // MiB} MiB)")
    if count > SKILL_FILES_LIMIT:
        raise BadInput(f"{folder}: the skill has {count} files (the limit is "
                       f"{SKILL_FILES_LIMIT})")


def load_skill(folder: Path) -> Skill:
    """One skill folder; anything wrong is one ``BadInput`` line naming the file and field."""
    where = folder / SKILL_FILE
    data = _front_matter(read_text(where, PROMPT_LIMIT, SKILL_FILE), where)
    name = data.get("name")
    if name is None:
        raise BadInput(f"{where}: name: missing from the front matter")
    if not isinstance(name, str) or not _SKILL_NAME.fullmatch(name):
        raise BadInput(f"{where}: name: {printable(str(name))!r} is not a valid skill name "
                       "(lowercase letters, digits and single hyphens, at most 64 characters)")
    if name != folder.name:
        raise BadInput(f"{where}: name: {name!r} is not the folder's name "
                       f"({printable(folder.name)!r}); they must be the same")
    description = data.get("description")
    if description is None:
        raise BadInput(f"{where}: description: missing from the front matter")
    return _skill(folder, name, description)


def _skill(folder: Path, name: str, description: Any) -> Skill:
    where = folder / SKILL_FILE
    if not isinstance(description, str) or not description.strip():
        raise BadInput(f"{where}: description: must be non-empty text")
    description = " ".join(description.split())
    if len(description) > DESCRIPTION_LIMIT:
        raise BadInput(f"{where}: description: {len(description)} characters (the limit is "
                       f"{DESCRIPTION_LIMIT})")
    if _XML_TAG.search(description) or not description.isprintable():
        raise BadInput(f"{where}: description: must not contain XML tags or control "
                       "characters")
    _check_files(folder)
    return Skill(name=name, description=description, path=folder.resolve(),
                 digest=digest_dir(folder))


def load_skills(root: Path) -> list[Skill]:
    """Every skill under ``root`` (each subfolder), sorted by name. Files at the top level
    (a README) and folders starting with ``.`` or ``_`` are not skills."""
    if not root.is_dir():
        raise BadInput(f"{root}: the skills directory is not a directory")
    skills: list[Skill] = []
    for d in sorted(root.iterdir()):
        if d.name.startswith((".", "_")) or d.name in _IGNORED:
            continue
        if d.is_symlink():
            raise BadInput(f"{printable(str(d))}: a symlink (a skill must be a folder)")
        if not d.is_dir():
            continue
        if not (d / SKILL_FILE).exists():
            raise BadInput(f"{printable(str(d))}: no {SKILL_FILE} (every folder in the skills "
                           "directory is a skill)")
        skills.append(load_skill(d))
    return skills


def load_shipped_skill(folder: Path) -> tuple[Skill, str | None]:
    """A skill a task ships, read as a skill-loading agent reads it (Claude Code: every field
    of the front matter optional; the name, when the front matter gives none that is valid, is
    the folder's; the description, when it gives none, the body's first paragraph). It keeps
    its folder (:attr:`Skill.folder`) whatever its name. With it, the name its front matter
    writes (``None``: none). ``BadInput``: why it cannot be honoured."""
    where = folder / SKILL_FILE
    text = read_text(where, PROMPT_LIMIT, SKILL_FILE)
    has_front = (text.lstrip("\ufeff").splitlines() or [""])[0].strip() == "---"
    data = _front_matter(text, where) if has_front else {}
    written = name = data.get("name")
    if not (isinstance(name, str) and _SKILL_NAME.fullmatch(name)):
        name = folder.name
        if not _SHIPPED_NAME.fullmatch(name):
            raise BadInput(f"{where}: no valid skill name (the front matter's name: is "
                           f"{printable(str(data.get('name')))!r}, the folder's "
                           f"{printable(folder.name)!r})")
    description = data.get("description")
    if not (isinstance(description, str) and description.strip()):
        description = _first_paragraph(text, has_front)
    return _skill(folder, name, description), None if written is None else str(written)


def _first_paragraph(text: str, has_front: bool) -> str:
    lines = text.lstrip("\ufeff").splitlines()
    if has_front:
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
        lines = lines[end + 1:]
    para: list[str] = []
    for line in lines:
        if line.strip() and not line.lstrip().startswith(("#", "```")):
            para.append(line.strip())
        elif para:
            break
    return " ".join(para)[:DESCRIPTION_LIMIT]


def shipped_skills(task: Task) -> tuple[list[Skill], list[str]]:
    """The skills ``task`` ships itself (a Harbor / SkillsBench task's ``environment/skills/``,
    :attr:`~gate.core.tasks.Task.skills_root`): each folder there with a ``SKILL.md``, read as the
    agent reads it (:func:`load_shipped_skill`); and, for each one that cannot be honoured
    (or whose name is not its folder's), a line saying so for the run's notes: none is
    dropped silently."""
    if task.skills_root is None or not task.skills_root.is_dir():
        return [], []
    found: list[Skill] = []
    notes: list[str] = []
    for d in sorted(task.skills_root.iterdir()):
        rel = printable(d.relative_to(task.path).as_posix())
        if not (d / SKILL_FILE).is_file():
            continue
        try:
            if d.is_symlink():
                raise BadInput(f"{rel}: a symlink (a skill must be a folder)")
            skill, written = load_shipped_skill(d)
        except BadInput as exc:
            notes.append(f"gate: skill {rel} not honoured ({exc}): the gate neither offers "
                         "nor switches it; a condition removes it from the skill folders")
            continue
        if any(s.name == skill.name for s in found):
            notes.append(f"gate: skill {rel} not honoured: its name {skill.name!r} is another "
                         "skill's; a condition removes it from the skill folders")
            continue
        if written is not None and written != d.name:
            notes.append(f"gate: skill {rel} is named {printable(written)!r} (not its "
                         f"folder's name): honoured as its folder, {printable(d.name)}/, where "
                         f"the agent loads it, by the name {skill.name!r}")
        found.append(skill)
    return found, notes


def own_skills(task: Task) -> list[Skill]:
    """The skills ``task`` ships itself (:func:`shipped_skills`)."""
    return shipped_skills(task)[0]


def run_skills(task: Task, chosen: Sequence[Skill], condition: str | None) -> list[Skill]:
    """The skills a run of ``task`` has: under a condition exactly ``chosen`` (the condition
    decides, the task's own skills included, :func:`skills_for`); without one, ``chosen`` and
    the task's own skills, as the task would run elsewhere (``chosen`` wins a name clash)."""
    if condition is not None:
        return list(chosen)
    names = {s.name for s in chosen}
    return sorted([*chosen, *(s for s in own_skills(task) if s.name not in names)],
                  key=lambda s: s.name)


def config_skills(cfg: GateConfig) -> list[Skill]:
    """The skills of ``[agent].skills`` (none when it is not set)."""
    if not cfg.agent.skills:
        return []
    folder = cfg.agent_path("skills")  # inside the repository, or exit 2 naming the key
    try:
        return load_skills(folder)
    except BadInput as exc:
        raise BadInput(f"[agent].skills: {exc}") from None


def skill_wording(skill: Skill) -> str:
    """A digest of what in ``skill`` only a model reads: every file's text, the simulator's
    :data:`NO_EFFECT_MARKER` and the layout of whitespace left out. Two versions of a skill
    with the same wording differ only in what the simulator models (the marker), so a
    simulator's verdict on the change is a verdict on it (gate.compare's ``sim_unjudged``)."""
    h = hashlib.sha256()
    for path in sorted(p for p in skill.path.rglob("*") if p.is_file()
                       and not _IGNORED & set(p.relative_to(skill.path).parts)):
        text = path.read_bytes().decode("utf-8", "replace").replace(NO_EFFECT_MARKER, "")
        h.update(f"{path.relative_to(skill.path).as_posix()}\0{' '.join(text.split())}\n"
                 .encode())
    return "sha256:" + h.hexdigest()[:16]


def skills_digest(skills: Sequence[Skill]) -> str:
    """One digest of a set of skills (names and contents; order does not matter)."""
    h = hashlib.sha256()
    for s in sorted(skills, key=lambda s: s.name):
        h.update(f"{s.name}\0{s.digest}\n".encode())
    return "sha256:" + h.hexdigest()[:16]


# ----- conditions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSkills:
    """What a task's ``metadata.json`` says about skills (``None``: no such skill)."""

    target: str | None
    irrelevant: str | None

    @property
    def negative_control(self) -> bool:
        """A task no skill is meant to help (``"none"`` / ``"none"``, or no keys at all)."""
        return self.target is None and self.irrelevant is None


def task_skills(task: Task, known: Sequence[Skill] | None = None) -> TaskSkills:
    """``target_skill`` / ``irrelevant_skill`` of the task's ``metadata.json``; with ``known``,
    a name that is not one of the skills is ``BadInput`` naming the file and field."""
    where = f"{task.id}: metadata.json"
    names = {s.name for s in known} if known is not None else None
    got: dict[str, str | None] = {}
    for key in ("target_skill", "irrelevant_skill"):
        value = task.metadata.get(key)
        if value is None or value == NO_SKILL:
            got[key] = None
            continue
        if not isinstance(value, str) or not _SKILL_NAME.fullmatch(value):
            raise BadInput(f"{where}: {key}: {printable(repr(value))} is not a skill name or "
                           f"{NO_SKILL!r}")
        if names is not None and value not in names:
            have = ", ".join(sorted(names)) or "none: [agent].skills is not set"
            raise BadInput(f"{where}: {key}: no skill named {value!r} (skills: {have})")
        got[key] = value
    if got["target_skill"] is not None and got["target_skill"] == got["irrelevant_skill"]:
        raise BadInput(f"{where}: irrelevant_skill: the same skill as target_skill")
    return TaskSkills(got["target_skill"], got["irrelevant_skill"])


def other_skill(task: Task, skills: Sequence[Skill], target: str,
                irrelevant: str | None) -> Skill | None:
    """The one other skill of ``target_plus_one``: not the target; not the irrelevant one
    while there is another choice. Chosen by the smallest hash of (task id, skill name), so
    the choice is fixed per task, differs between tasks, and adding a skill changes it only
    when the new skill wins."""
    others = [s for s in skills if s.name != target]
    preferred = [s for s in others if s.name != irrelevant] or others
    if not preferred:
        return None
    return min(preferred, key=lambda s: hashlib.sha256(f"{task.id}\0{s.name}".encode()).digest())


def standard_conditions(task: Task, skills: Sequence[Skill]) -> list[str]:
    """The standard conditions that apply to ``task``, in :data:`STANDARD_CONDITIONS` order."""
    return [c for c in STANDARD_CONDITIONS if skills_for(task, c, skills) is not None]


def skills_for(task: Task, condition: str, all_skills: Sequence[Skill],
               overlays: Mapping[str, ConditionConfig] | None = None) -> list[Skill] | None:
    """The skills a run of ``task`` under ``condition`` gets; ``None``: the condition does
    not apply to this task. ``overlays`` are the named conditions of ``gate.toml``. The
    skills the task ships itself (:func:`own_skills`) count with ``all_skills`` (a
    configured skill of the same name wins)."""
    configured = {s.name for s in all_skills}
    all_skills = [*all_skills, *(s for s in own_skills(task) if s.name not in configured)]
    by_name = {s.name: s for s in all_skills}
    if overlays and condition in overlays:
        picked = []
        for name in overlays[condition].skills:
            if name not in by_name:
                have = ", ".join(sorted(by_name)) or "none: [agent].skills is not set"
                raise BadInput(f"[conditions.{condition}].skills: no skill named "
                               f"{printable(name)!r} (skills: {have})")
            picked.append(by_name[name])
        return sorted(picked, key=lambda s: s.name)
    if condition not in STANDARD_CONDITIONS:
        named = f"; from gate.toml: {', '.join(sorted(overlays))}" if overlays else ""
        raise BadInput(f"unknown condition {printable(condition)!r} (standard: "
                       f"{', '.join(STANDARD_CONDITIONS)}{named})")
    meta = task_skills(task, all_skills)
    if condition == CONTROL:
        return []
    if condition == FULL:
        return sorted(all_skills, key=lambda s: s.name)
    if condition == NEGATIVE:
        return [by_name[meta.irrelevant]] if meta.irrelevant else None
    if meta.target is None:
        return None
    target = by_name[meta.target]
    if condition == TARGET:
        return [target]
    if condition == TARGET_PLUS_UNRELATED:
        if meta.irrelevant is None:
            return None
        return sorted([target, by_name[meta.irrelevant]], key=lambda s: s.name)
    other = other_skill(task, all_skills, meta.target, meta.irrelevant)
    return sorted([target, other], key=lambda s: s.name) if other else None
