"""Every library the gate imports is one `pip install -e .` installs: declared in pyproject.toml.

The machine that runs the tests has more installed than a user's fresh venv (botocore was there,
so every Bedrock test passed while `gate run --sim` with `upstream = "bedrock"` in a fresh
venv failed every run on ``ModuleNotFoundError: botocore``). So the check reads the source, not
the environment: each third-party top-level module any module of ``gate/`` imports (at module
level, in a function, or under ``TYPE_CHECKING``) must belong to a distribution that
``[project].dependencies`` names, directly or through a declared extra (``anthropic[bedrock]``
brings botocore and boto3). And the SDK's cloud clients the upstream ports build import their
own libraries at run time (``AnthropicBedrock`` imports boto3): their extras are declared.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(spec: str) -> tuple[str, set[str]]:
    req = Requirement(spec)
    return _canon(req.name), set(req.extras)


def declared() -> dict[str, set[str]]:
    """The distributions ``pip install -e .`` brings by name: each declared requirement, with
    what its declared extras add."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out: dict[str, set[str]] = {}
    for spec in project["dependencies"]:
        name, extras = _requirement(spec)
        out.setdefault(name, set()).update(extras)
        for req in md.requires(name) or []:
            marker = Requirement(req).marker
            if marker is not None and any(marker.evaluate({"extra": e}) for e in extras):
                out.setdefault(_requirement(req)[0], set())
    return out


def imported_top_levels() -> dict[str, str]:
    """Each top-level module ``gate/`` imports that is neither the gate's nor the standard
    library's, with one place that imports it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "gate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                     and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top != "gate" and top not in sys.stdlib_module_names:
                    found.setdefault(top, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_library_the_gate_imports_is_declared() -> None:
    owners = md.packages_distributions()
    have = declared()
    missing = []
    for module, where in imported_top_levels().items():
        dists = {_canon(d) for d in owners.get(module, [module])}
        if not dists & set(have):
            missing.append(f"{module} ({where}; distribution {', '.join(sorted(dists))})")
    assert not missing, "imported by gate/ but not declared in pyproject.toml: " + "; ".join(
        missing)


def test_the_sdk_cloud_clients_extras_are_declared() -> None:
    """The upstream ports hand the builtin agent ``AnthropicBedrock`` / ``AnthropicVertex``,
    which import boto3 and google-auth only when built: the SDK's extras for them."""
    ports = " ".join(p.read_text() for p in (ROOT / "gate" / "upstream").glob("*.py"))
    have = declared()
    for client, extra, brings in (("AnthropicBedrock", "bedrock", "boto3"),
                                  ("AnthropicVertex", "vertex", "google-auth")):
        assert client in ports, client  # the port still builds it (else drop this row)
        assert extra in have.get("anthropic", set()) and brings in have, (client, have)
