"""Counts in the PR comment are said as a person would: "1 task", "2 tasks", never "task(s)".

Rendered from the shipped templates themselves, with just the parts of their context that
the counted lines need (the rest undefined, so left out)."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2 import ChainableUndefined, Environment, PackageLoader

from gate.ci._policy import check_budget
from gate.core.results import Interruption
from gate.errors import Unmeasurable
from gate.report import FILTERS


def render(name: str, **context: Any) -> str:
    env = Environment(loader=PackageLoader("gate", "templates"), trim_blocks=True,
                      lstrip_blocks=True, undefined=ChainableUndefined)
    env.filters.update(FILTERS)  # the formatter's, as every template environment has them
    return env.get_template(name).render(**context)


ROW = {"task": "t", "baseline": "1/1", "candidate": "0/1", "p": "0.5", "change": "x",
       "reasons": ""}


@pytest.mark.parametrize(("n", "word"), [(1, "task"), (2, "tasks")])
def test_hidden_and_noted_tasks_are_counted_in_words(n: int, word: str) -> None:
    comment = render("comment.md.j2", task_rows=[ROW], tasks_hidden=n,
                     behaviour_rows=[{"task": "t", "baseline": "", "candidate": ""}] * n)
    assert f"_{n} more {word} not shown" in comment
    assert f"Behaviour notes from verify ({n} {word};" in comment
    evidence = render("evidence.md.j2", ev={"tasks": [], "hidden": n, "movers": []})
    assert f"_{n} more regressed {word} not shown" in evidence
    assert "(s)" not in comment + evidence


@pytest.mark.parametrize(("n", "words"), [(1, "1 planned run not"), (3, "3 planned runs not")])
def test_a_budget_stop_counts_its_runs_in_words(n: int, words: str) -> None:
    from gate.core.results import Results

    stopped = Results.model_construct(interrupted=Interruption.model_construct(
        reason="budget: $1 spent", missing=[object()] * n))
    with pytest.raises(Unmeasurable) as exc:
        check_budget(stopped)
    assert words in str(exc.value) and "(s)" not in str(exc.value)


@pytest.mark.parametrize(("n", "words"), [(1, "1 turn"), (2, "2 turns")])
def test_turns_are_counted_in_words_wherever_a_run_is_told(n: int, words: str) -> None:
    """The comment's evidence, the HTML report's runs and ``gate run``'s progress line say
    "1 turn", never "1 turns"."""
    import numpy as np

    from gate.cli._progress import run_line
    from gate.compare._synthetic import synthetic_results
    from gate.report import render_html

    run = {"replication": 0, "turns": n, "ending": "answered", "parted": None,
           "path_line": "read", "calls": [], "final": None, "verify": None}
    evidence = render("evidence.md.j2", ev={"tasks": [{"task": "t", "counts": "1/1 → 0/1",
                                                       "runs": [run]}],
                                            "hidden": 0, "movers": []})
    assert f"replication 0 ({words}, answered)" in evidence
    results = synthetic_results([1.0], 1, np.random.default_rng(0))
    results = results.model_copy(update={"runs": [
        r.model_copy(update={"turns": n}) for r in results.runs]})
    assert f"({words}, " in run_line(results.runs[0])
    page = render_html(results)
    assert f"· {words} ·" in page and "1 turns" not in page


def test_a_new_baseline_counts_its_runs_and_tasks_in_words() -> None:
    import numpy as np

    from gate.compare._synthetic import synthetic_results
    from gate.pool.baseline import promote

    results = synthetic_results([1.0], 6, np.random.default_rng(0))
    _, said = promote(results, None)
    assert "6 runs over 1 task" in said and "1 tasks" not in said
