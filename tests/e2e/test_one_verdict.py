"""One verdict everywhere: ``gate report``'s page says what ``gate compare`` says.

Real ``gate run --sim`` runs, judged by the real CLI twice from the same files: ``gate compare
--format json`` and ``gate report --html``. For every shape (a regression, no regression, a
run of skill conditions against a plain baseline and against a baseline of the same
conditions, one task of three: inconclusive) the page's banner holds the same verdict and
the same reasons, each once, and nothing else of its own (docs/architecture.md: every view
is handed the verdict ``gate.ci.verdict`` reaches).
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.simruns import TASKS, gate_popen, one_turn_config, sim_run

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
WORDS = {"pass": "No regression", "regression": "Regression", "inconclusive": "Inconclusive"}



def _done(proc: subprocess.Popen[str], codes: tuple[int, ...]) -> str:
    out, err = proc.communicate(timeout=280)
    assert proc.returncode in codes, out + err
    assert "Traceback" not in err, err
    return out






class _Banner(HTMLParser):
    """The page's verdict banner: its class, its title and each of its lines."""

    def __init__(self) -> None:
        super().__init__()
        self.cls: str | None = None
        self.title = ""
        self.lines: list[str] = []
        self._depth = 0  # inside <header class="verdict ...">
        self._tag: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class") or ""
        if tag == "header" and cls.split()[:1] == ["verdict"]:
            self.cls, self._depth = cls, 1
        elif self._depth and tag in ("h1", "p"):
            self._tag = tag
            if tag == "p":
                self.lines.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "header" and self._depth:
            self._depth = 0
        if tag == self._tag:
            self._tag = None

    def handle_data(self, data: str) -> None:
        if self._tag == "h1":
            self.title += data
        elif self._tag == "p":
            self.lines[-1] += data


def _said(verdict: dict[str, Any]) -> list[str]:
    """What ``gate compare``'s verdict says: each reason, each clause of its headline that
    is not a reason, and each of its notes (the banner's lines, in some order)."""
    word = WORDS[verdict["verdict"]]
    assert verdict["headline"].startswith(word + ": "), verdict["headline"]
    rest = verdict["headline"][len(word) + 2:]
    said = []
    for reason in verdict["reasons"]:
        said.append(reason)
        rest = rest.replace(reason, "", 1)
    said += [p for p in (p.strip(" ;") for p in rest.split("; ")) if p.strip(" ;,")]
    return said + [n for n in dict.fromkeys(verdict["notes"]) if n not in said]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any],
                                                                        _Banner, str]]:
    """shape → (``gate compare --format json``'s verdict, the page's banner, what ``gate
    report`` printed), each from the same two files and the same gate.toml."""
    tmp = tmp_path_factory.mktemp("one-verdict")
    config, one_turn = REPO / "gate.toml", one_turn_config(tmp)
    conditions = ("--condition", "control", "--condition", "target")
    procs = [sim_run(tmp, "base", 1, config=config), sim_run(tmp, "pr", 2, config=config),
             sim_run(tmp, "one-turn", 2, config=one_turn),
             sim_run(tmp, "skills", 3, *conditions, config=config, k=2),
             sim_run(tmp, "skills-base", 5, *conditions, config=config, k=3),
             sim_run(tmp, "one-task", 4, config=config, tasks=TASKS[:1], k=2)]
    for p in procs:
        _done(p, (0, 1, 3))
    shapes = {"regression": ("base", "one-turn"), "no regression": ("base", "pr"),
              "skills against a plain baseline": ("base", "skills"),
              "skills against skills": ("skills-base", "skills"),
              "one task: inconclusive": ("base", "one-task")}
    out = {}
    for shape, (base, pr) in shapes.items():
        files = (tmp / f"{base}.json", tmp / f"{pr}.json")
        verdict = json.loads(_done(gate_popen("compare", *files, "--format", "json", "--config",
                                         config, cwd=tmp), (0, 1, 3)))
        page = tmp / f"{pr}-against-{base}.html"
        written = _done(gate_popen("report", files[1], "--baseline", files[0], "--html", page,
                              "--config", config, cwd=tmp), (0,))
        banner = _Banner()
        banner.feed(page.read_text())
        out[shape] = (verdict, banner, written)
    return out


def test_the_shapes_reach_the_verdicts_they_are_for(
        judged: dict[str, tuple[dict[str, Any], _Banner, str]]) -> None:
    got = {shape: v["verdict"] for shape, (v, _, _) in judged.items()}
    assert got["regression"] == "regression"
    assert got["no regression"] == "pass"
    assert got["one task: inconclusive"] == "inconclusive"
    # the baseline gate compares plain runs only (docs/statistics.md §9): a run of conditions
    # alone has none to compare with a plain baseline, and that is never a pass
    assert got["skills against a plain baseline"] == "inconclusive"


@pytest.mark.parametrize("shape", ["regression", "no regression",
                                   "skills against a plain baseline", "skills against skills",
                                   "one task: inconclusive"])
def test_the_page_says_what_gate_compare_says(
        judged: dict[str, tuple[dict[str, Any], _Banner, str]], shape: str) -> None:
    verdict, banner, written = judged[shape]
    assert banner.cls == f"verdict v-{verdict['verdict']}", (banner.cls, verdict["headline"])
    assert banner.title.strip() == f"agent-gate: {WORDS[verdict['verdict']]}"
    assert f"report written ({verdict['verdict']}, " in written, written
    lines = [" ".join(line.split()) for line in banner.lines]
    said = [" ".join(s.split()) for s in _said(verdict)]
    assert sorted(lines) == sorted(said), (lines, verdict["headline"], verdict["reasons"])
