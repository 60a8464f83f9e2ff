"""The README is a page, not a manual: it fits a screen or three, links each docs page once, and
its commands are the ones CI runs; every link in it and in docs/ reaches a file and a heading
that exist, so text moved out of the README is still where the links say it is."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_the_readme_fits_and_links_each_docs_page_once() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    links = [t for t in LINK.findall(FENCE.sub("", text)) if t.startswith("docs/")]
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    linked = [t.split("#")[0] for t in links if t.endswith(".md") or ".md#" in t]
    assert {p: linked.count(p) for p in pages} == dict.fromkeys(pages, 1)


def test_every_link_in_the_readme_and_docs_reaches_a_file_and_a_heading() -> None:
    broken = []
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_pictures_are_there_and_made_by_the_script() -> None:
    text = README.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", FENCE.sub("", text))
    assert images == ["docs/img/comment.png", "docs/img/report.png"]
    for image in images:
        assert (ROOT / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", image
    assert "docs/pictures.py" in text and (ROOT / "docs" / "pictures.py").is_file()


def test_ci_runs_the_readmes_two_commands_on_the_python_it_names() -> None:
    """.ci/run installs as the README says and runs the README's test command, exactly (the
    install quietly: `-q` aside, the same line); the README names pyproject's Python."""
    text = README.read_text(encoding="utf-8")
    two = next(b for b in _blocks(text, "bash") if "git clone" in b)
    commands = [line.split("#")[0].strip() for line in two.splitlines()]
    install = next(c for c in commands if "pip install" in c).split(" && ")[0]
    test = next(c for c in commands if "pytest" in c)
    assert install == "python3 -m pip install -e '.[dev]'" and test == "python3 -m pytest"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert install in [line.replace(" -q ", " ") for line in ci]
    assert test in ci
    assert "gate run --sim" in two.split(install, 1)[1].splitlines()[0]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11" and "Python >= 3.11" in two and "Python 3.11 or newer" in text
