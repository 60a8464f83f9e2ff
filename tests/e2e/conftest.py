"""Fixtures the end-to-end tests share: a baseline and a PR run laid out as ``gate run`` lays
them out (tests/helpers/report.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.core.results import write_results
from tests.helpers.browser import find_browser
from tests.helpers.report import HOSTILE, TOOL_EVENTS, _results, _run, _transcript


@pytest.fixture()
def pair(tmp_path: Path) -> dict[str, Path]:
    """A baseline run and a PR run (as ``gate run`` lays them out: X.json beside
    X.transcripts/), the PR's with hostile text in a reason, notes and a transcript."""
    base = [_run(t, r, "passed") for t in ("alpha", "beta") for r in range(3)]
    pr = [_run("alpha", r, "passed") for r in range(3)]
    pr += [_run("beta", 0, "failed", reason=HOSTILE, notes=HOSTILE, turns=9),
           _run("beta", 1, "failed", reason="verify exited 1: AssertionError", turns=8),
           _run("beta", 2, "passed")]
    for name, runs in (("base", base), ("pr", pr)):
        write_results(tmp_path / f"{name}.json", _results(runs))
        for r in runs:
            marker = f"{name.upper()}-TRANSCRIPT-{r.task}-{r.replication}"
            events = [*TOOL_EVENTS, {"type": "tool", "name": "bash", "input": {"command": "x"},
                                     "output": marker, "is_error": False}]
            _transcript(tmp_path / f"{name}.transcripts", f"{r.task}-r{r.replication}.jsonl",
                        events)
    hostile = [*TOOL_EVENTS, {"type": "tool", "name": "bash", "input": {"command": HOSTILE},
                              "output": HOSTILE, "is_error": True},
               {"type": "final", "message": HOSTILE, "failure": HOSTILE, "infra_error": None},
               {"type": HOSTILE, "x": HOSTILE}]
    _transcript(tmp_path / "pr.transcripts", "beta-r0.jsonl", hostile)
    (tmp_path / "gate.toml").write_text("[gate]\npermutations = 999\npower_simulations = 0\n")
    return {"base": tmp_path / "base.json", "pr": tmp_path / "pr.json",
            "config": tmp_path / "gate.toml", "out": tmp_path / "out" / "report.html"}


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Headless Chromium (the OS package) through Playwright, or a skip that names the fix
    (a failure under ``GATE_REQUIRE_BROWSER=1``): one browser per module."""
    path = find_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = p.chromium.launch(executable_path=path, args=args, headless=True)
        yield browser
        browser.close()
