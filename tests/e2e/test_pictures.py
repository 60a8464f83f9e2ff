"""The README's pictures come from docs/pictures.py, never from a hand: the comment's Markdown
renders as GitHub shows it (tables, Markdown inside the collapsed blocks, every block closed),
and the script, run end to end on a real simulator run, writes both PNGs from the real browser
(skipped without Chromium or an emoji font; failed under ``GATE_REQUIRE_BROWSER=1``)."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.browser import find_browser

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "docs" / "pictures.py"


def _pictures() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pictures", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_comment_renders_as_github_shows_it() -> None:
    pytest.importorskip("markdown")
    md = ("### ❌ agent-gate: regression\n\n| metric | verdict |\n|---|---|\n"
          "| pass rate | ❌ regression |\n\n<details open><summary>Per-task changes</summary>\n\n"
          "| task | change |\n|---|---|\n| fix-a | newly failing |\n\n</details>\n")
    page = _pictures().comment_html(md)
    assert page.count("<table>") == 2  # the one inside the collapsed block too
    details = page[page.index("<details"):page.index("</details>")]
    assert "<td>fix-a</td>" in details and "open" not in details.split(">")[0]
    assert "<h3>❌ agent-gate: regression</h3>" in page and "<meta charset='utf-8'>" in page


@pytest.mark.slow
@pytest.mark.browser
def test_the_script_makes_both_pictures_from_a_real_run(tmp_path: Path) -> None:
    find_browser()
    pictures = _pictures()
    if why := pictures.emoji_font_problem():
        if os.environ.get("GATE_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "-k", "1"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [f"wrote {tmp_path / 'comment.png'}",
                                     f"wrote {tmp_path / 'report.png'}"]
    width, height = _png_size(tmp_path / "comment.png")
    assert 600 < width < pictures.WIDTH["comment"] and height > 200  # the comment's box alone
    assert _png_size(tmp_path / "report.png") == (pictures.WIDTH["report"], 900)  # first screen
