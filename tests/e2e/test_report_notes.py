"""``gate report --html`` says the verdict policy's notes (``Comparison.notes``) as the PR
comment and ``gate compare`` do: each once, as text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from markupsafe import escape

from gate.cli import main
from gate.compare import compare
from gate.compare._synthetic import reference_rates, synthetic_results
from gate.core.config import GateSettings
from gate.core.results import load_results, write_results
from gate.report import render_html
from tests.helpers.report import HOSTILE, _report


def _with_notes(pair: dict[str, Path]) -> None:
    """A baseline refreshed from a dirty working tree, a PR run whose stream was cut short and
    a task that kept NET_RAW: three notes of compare's and the judge's."""
    data = json.loads(pair["base"].read_text())
    data["uncommitted"] = [{"commit": data.get("commit"), "created_at": data["created_at"],
                            "why": "uncommitted changes"}]
    pair["base"].write_text(json.dumps(data))
    pr = load_results(pair["pr"])
    pr.runs[0].estimated = "stream cut short"
    pr.suite.tasks["alpha"].net_raw = True
    write_results(pair["pr"], pr)


def _text(page: str) -> str:
    """The page's visible text, a line per element, unescaped."""
    body = page[page.index("<body>"):]
    body = re.sub(r"<script\b.*?</script>", "", body, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", body))


def test_the_page_says_each_of_compares_notes_once(pair: dict[str, Path]) -> None:
    _with_notes(pair)
    res = CliRunner().invoke(main, ["compare", str(pair["base"]), str(pair["pr"]), "--format",
                                    "json", "--config", str(pair["config"])])
    notes = json.loads(res.stdout)["notes"]
    assert any("uncommitted changes" in n for n in notes), notes
    assert any("estimated" in n for n in notes) and any("NET_RAW" in n for n in notes), notes
    code, out, err = _report(pair["pr"], "--baseline", pair["base"], "--html", pair["out"],
                             "--config", pair["config"])
    assert code == 0, out + err
    text = _text(pair["out"].read_text())
    for note in notes:
        assert text.count(note) == 1, (note, text[:3000])


def test_a_note_is_text_never_markup() -> None:
    """A note may carry a file's text (a task's name, an interruption's reason): escaped."""
    rng = np.random.default_rng(0)
    base = synthetic_results(reference_rates(4), 6, rng)
    pr = synthetic_results(reference_rates(4), 6, rng)
    c = compare(base, pr, GateSettings(permutations=999, power_simulations=0))
    c = c.model_copy(update={"notes": [*c.notes, f"a note {HOSTILE}"]})
    page = render_html(pr, baseline=base, comparison=c)
    assert str(escape(f"a note {HOSTILE}")) in page
    assert HOSTILE not in page
