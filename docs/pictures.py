"""The README's two pictures, made from a real simulator run: one command, never by hand.

    python3 docs/pictures.py [--out docs/img]

It copies this repository's agent, tasks, skills and ``baseline.json`` into a scratch folder,
regresses the agent there (``max_turns`` 30 → 3: the longer tasks cannot finish), runs the
bundled suite on the simulator (``gate run --sim``, a fixed seed, so the same tasks fail every
time), and then

* renders ``gate compare --format markdown`` — the body of the PR comment — to HTML (the
  ``markdown`` package, a dev dependency), styled like a comment on GitHub with its collapsed
  blocks closed, as a reviewer first sees it, and
* writes ``gate report --html`` for the same two files,

and screenshots both in the system Chromium driven by Playwright (``comment.png``,
``report.png``). Run it again after a change to the comment or the report: the pictures then
show what the code does now. It runs ``python3 -m gate`` from this checkout (``PYTHONPATH``), so
what is pictured is the code beside it, not an installed copy.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED = 1
#: what the pictured pull request changes: a turn budget too small for the longer tasks
REGRESSION = ("max_turns = 30", "max_turns = 3")
COPIED = ("gate.toml", "agent", "skills", "tasks", "baseline.json")
WIDTH = {"comment": 900, "report": 1280}

#: GitHub's comment look, near enough: its font stack, table borders, a box round the comment
STYLE = """
body { margin: 0; background: #f6f8fa; }
.comment { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  color: #1f2328; background: #fff; border: 1px solid #d1d9e0; border-radius: 6px;
  margin: 16px; }
.comment header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px;
  border-radius: 6px 6px 0 0; color: #59636e; }
.comment header b { color: #1f2328; }
.comment .body { padding: 4px 16px 12px; }
h3 { font-size: 1.25em; margin: 12px 0 8px; }
table { border-collapse: collapse; margin: 8px 0 12px; display: block; overflow: auto; }
th, td { border: 1px solid #d1d9e0; padding: 4px 10px; }
th { background: #f6f8fa; font-weight: 600; }
tr:nth-child(2n) td { background: #f6f8fa; }
details { margin: 6px 0; }
summary { cursor: pointer; }
code { background: #eff1f3; border-radius: 4px; padding: 1px 4px; font-size: 85%; }
a { color: #0969da; text-decoration: none; }
"""


def gate(cwd: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    """``python3 -m gate ARGS`` from this checkout, in ``cwd``; its stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "GATE_JOBS": "4"}
    env.pop("ANTHROPIC_API_KEY", None)  # the simulator only: nothing here may reach the API
    p = subprocess.run([sys.executable, "-m", "gate", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=900)
    if p.returncode not in ok:
        raise SystemExit(f"gate {' '.join(args)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def regressed_repository(where: Path) -> Path:
    """This repository's agent and suite, with the pictured pull request's change applied."""
    repo = where / "repo"
    repo.mkdir()
    for name in COPIED:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, repo / name)
        else:
            shutil.copy2(src, repo / name)
    toml = repo / "gate.toml"
    text = toml.read_text()
    if REGRESSION[0] not in text:
        raise SystemExit(f"gate.toml: no `{REGRESSION[0]}` to regress")
    toml.write_text(text.replace(REGRESSION[0], REGRESSION[1], 1))
    # a commit of fixed author and date, so the pictured run names the same commit every time
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_AUTHOR_NAME": "pictures",
           "GIT_AUTHOR_EMAIL": "pictures@example.invalid", "GIT_COMMITTER_NAME": "pictures",
           "GIT_COMMITTER_EMAIL": "pictures@example.invalid"}
    for args in (["init", "-q", "-b", "pr"], ["add", "-A"],
                 ["commit", "-q", "--no-gpg-sign", "-m", "agent: max_turns 30 -> 3"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def comment_html(markdown_text: str) -> str:
    """The comment's Markdown as GitHub shows it: tables rendered, Markdown inside the
    ``<details>`` blocks rendered too, every block closed."""
    import markdown

    # GitHub renders Markdown inside <details> when blank lines set it apart; Python-Markdown
    # does so for a block marked markdown="1" (md_in_html)
    text = re.sub(r"<details(?![^>]*\bmarkdown=)", '<details markdown="1"', markdown_text)
    text = re.sub(r"<details([^>]*)\sopen\b", r"<details\1", text)
    body = markdown.markdown(text, extensions=["tables", "md_in_html", "sane_lists"])
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<style>{STYLE}</style></head><body><div class='comment'><header>"
            "<b>github-actions</b> <span>bot</span> commented</header>"
            f"<div class='body'>{body}</div></div></body></html>")


def emoji_font_problem() -> str | None:
    """The verdicts are emoji: without a colour emoji font they would be pictured as boxes."""
    found = subprocess.run(["fc-list", ":charset=2705"], capture_output=True, text=True,
                           check=False) if shutil.which("fc-list") else None
    if found is None or not found.stdout.strip():
        return "no emoji font (the verdicts' ✅ ❌): apt-get install fonts-noto-color-emoji"
    return None


def screenshot(page_path: Path, png: Path, width: int, *, element: str | None) -> None:
    """``page_path`` in headless Chromium (the OS package), ``width`` px wide, as a PNG: the
    first screen, or the whole of ``element`` (a CSS selector)."""
    from playwright.sync_api import sync_playwright

    browser_path = (os.environ.get("GATE_CHROMIUM") or shutil.which("chromium")
                    or shutil.which("chromium-browser"))
    if browser_path is None:
        raise SystemExit("no Chromium: apt-get install chromium (or set GATE_CHROMIUM)")
    with sync_playwright() as p:
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = p.chromium.launch(executable_path=browser_path, args=args, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900},
                                    device_scale_factor=1)
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(("file:", "data:")) else route.abort())
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            if element is None:
                page.screenshot(path=str(png), animations="disabled")
            else:
                page.locator(element).screenshot(path=str(png), animations="disabled")
        finally:
            browser.close()


def make(out: Path, replications: int | None = None) -> list[Path]:
    """Run, render, screenshot: the two PNGs in ``out`` (``replications``: fewer runs than
    gate.toml's, for a quick check of this script; the pictures use gate.toml's)."""
    if why := emoji_font_problem():
        raise SystemExit(why)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gate-pictures-") as tmp:
        repo = regressed_repository(Path(tmp))
        k = ["-k", str(replications)] if replications else []
        gate(repo, "run", "--sim", "--seed", str(SEED), *k, "-o", "pr.json")
        comment = gate(repo, "compare", "baseline.json", "pr.json", "--format", "markdown",
                       ok=(0, 1, 3))
        (repo / "comment.html").write_text(comment_html(comment), encoding="utf-8")
        gate(repo, "report", "pr.json", "--baseline", "baseline.json", "--html", "report.html")
        made = [out / "comment.png", out / "report.png"]
        screenshot(repo / "comment.html", made[0], WIDTH["comment"], element=".comment")
        screenshot(repo / "report.html", made[1], WIDTH["report"], element=None)
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img",
                    help="where the PNGs go (default: docs/img)")
    ap.add_argument("-k", "--replications", type=int, default=None,
                    help="runs per task (default: gate.toml's; fewer only to try the script)")
    args = ap.parse_args()
    for png in make(args.out, args.replications):
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
