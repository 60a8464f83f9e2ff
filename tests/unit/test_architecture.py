"""The gate's shape, checked from its source: import direction, cycles, sizes.

The import graph of ``gate/`` is read with ``ast`` (every import counts: module level,
function level, and under ``TYPE_CHECKING``), so a lazy import cannot hide a dependency.

- A package's private modules and names are its own: from outside ``gate.<pkg>`` nothing
  imports ``gate.<pkg>._x``, and no unit imports another unit's ``_private`` names (import
  what the package's ``__init__`` exports in ``__all__``); a layer package's public module
  (``gate.execution.run``) owns its ``_private`` names, even from its sibling modules.
- No import cycle between the gate's units (a unit is a top-level module, ``gate.errors``, or
  a package, ``gate.report``): a reader can follow the pipeline one way; nor between the
  modules of one package (Docker's per-run container and its sandbox once imported each other).
- A task's format answers for it: outside a format's own module nothing reads what the format
  read the task from (``Task.native``, once ``Task.harbor``) or compares a task's format name
  (``task.layout == "harbor"``); the format put its answers in the task's fields.
- No module over 700 lines, no function over 100 lines.
- Nothing in ``gate/`` writes ``os.environ``: settings go to a child's environment or to
  the HTTP client explicitly.
- The upstream is a port: outside ``gate/upstream/`` (and the simulator's protocol modules of
  the upstreams whose wire format it speaks, ``SIMULATOR_PROTOCOLS``) no module of the gate
  names a provider (``PROVIDER_NAMES``: a client's ``ANTHROPIC_*`` variable, the Messages
  path, the API key's header, Bedrock, Vertex); the meter, the session, the agents, the scrub,
  the simulator and gate ci ask the port. Templates and docs are text for people, not read.
- The layers are packages: ``LAYERS`` places every unit of ``gate/`` in one layer, bottom to
  top, and a unit imports only from its own layer and those below; ``gate/`` holds no module
  of its own beyond ``FLAT`` (the process-level helpers, the errors, the usage and the scrub,
  which every layer may use), so a new module goes into the package of its layer.
  ``FORBIDDEN`` lists, as data, the import directions that must never exist within that order
  (execution → the GitHub package, the report → GitHub, gate ci's stages → GitHub but through
  the forge's one adapter, ...), checked module by module.

``KNOWN`` lists the offenders that other engineers are reworking at the time of writing;
the lead removes an entry once its rework is merged. Nothing else may be added to it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parents[2] / "gate"

# ---- the one allow-list: known offenders, owned by other reworks (remove after merging) ----
KNOWN: dict[str, set[str]] = {
    "long module": set(),
    "long function": set(),
    "private import": set(),
    "cycle": set(),
    # cycles between the modules of one package, found when this check was added: the meter's
    # is type annotations only (TYPE_CHECKING); gate ci's comment and Pages stages import each
    # other inside functions (gate/ci is being reworked into a forge port)
    "module cycle": set(),
    "format read": set(),
    # the start-up hand-over of credentials out of the process environment (gate.secrets):
    # not a setting; it removes the secrets before anything else runs
    "environ": {"gate/secrets.py"},
    # the forbidden directions still found (none: keep it so)
    "layer": set(),
    # modules outside the upstream ports that name a provider (none: keep it so)
    "provider name": set(),
}

# ---- the upstream port: what names a provider, and the only modules that may ----
PROVIDER_NAMES = re.compile(r"ANTHROPIC_|(?i:/v1/messages|x-api-key|bedrock|vertex)")
UPSTREAM_PORTS = ("gate/upstream/",)
# the simulator stands in for each upstream on the wire: its protocol module for one speaks
# that upstream's paths and framing (the Messages API's own is read from the port)
SIMULATOR_PROTOCOLS = ("gate/sim/_bedrock.py", "gate/sim/_vertex.py")

# ---- the layers, as packages, bottom to top: a unit (a top-level module or a package)
# imports only from its own layer and the layers below it ----
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the foundation", ("gate._children", "gate._files", "gate._lazy", "gate.errors",
                        "gate.usage")),
    ("the upstream port", ("gate.upstream",)),
    ("the credentials' scrub", ("gate.secrets", "gate._git")),
    ("the core formats", ("gate.formats", "gate.core")),
    ("the verdict", ("gate.compare",)),
    ("the report", ("gate.report",)),
    ("main's pool", ("gate.pool",)),
    ("execution", ("gate.sandbox", "gate.agents", "gate.meter", "gate.sim", "gate.execution")),
    ("the forge's adapters", ("gate.github",)),
    ("gate ci", ("gate.ci",)),
    ("the commands", ("gate.cli", "gate.setup", "gate.__main__")),
)
# the modules gate/ holds itself (every other module lives in its layer's package)
FLAT = ("__init__", "__main__", "_children", "_files", "_git", "_lazy", "errors", "secrets",
        "usage")
EXECUTION = dict(LAYERS)["execution"]
CORE_FORMATS = dict(LAYERS)["the core formats"]
POOL = dict(LAYERS)["main's pool"]
# the verdict (gate.compare) stands on the formats alone
BELOW_THE_VERDICT = ("gate._files", "gate.errors", "gate.usage", "gate.core")
# the upstream port stands below everything that asks it
BELOW_THE_PORT = ("gate.errors", "gate.usage", "gate.upstream")
# gate ci's stages see the forge through its port (gate/ci/_forge.py); one module adapts
# GitHub to it
FORGE_ADAPTERS = ("gate.ci._github",)
# (rule, importers, forbidden targets, importers the rule exempts)
FORBIDDEN: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("execution → the GitHub package", EXECUTION, ("gate.github",), ()),
    ("the GitHub adapters → the judge", ("gate.github",), ("gate.compare", "gate.pool.baseline"),
     ()),
    ("core formats → agents", CORE_FORMATS + POOL, ("gate.agents",), ()),
    ("the report → GitHub", ("gate.report",), ("gate.github",), ()),
    ("the report → gate ci", ("gate.report",), ("gate.ci",), ()),
    ("the sandbox → the meter", ("gate.sandbox",), ("gate.meter",), ()),
    ("gate ci's stages → GitHub (not through the forge's adapter)", ("gate.ci",),
     ("gate.github",), FORGE_ADAPTERS),
)


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    path: str  # gate/...py
    line: int
    target: str  # dotted module imported (or imported from)
    names: tuple[str, ...]  # names imported from ``target`` (empty for ``import x``)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(GATE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _files() -> list[Path]:
    return sorted(GATE.rglob("*.py"))


@functools.cache
def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path) -> Iterator[Import]:
    name = _module_name(path)
    is_pkg = path.name == "__init__.py"
    rel = str(path.relative_to(GATE.parent))
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("gate"):
                    yield Import(name, rel, node.lineno, alias.name, ())
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importer's package
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target == "gate" or target.startswith("gate."):
                yield Import(name, rel, node.lineno, target, tuple(a.name for a in node.names))


def _all_imports() -> list[Import]:
    return [i for p in _files() for i in _imports(p)]


def _modules() -> set[str]:
    return {_module_name(p) for p in _files()}


def _unit(module: str) -> str:
    """``gate.report._html`` → ``gate.report``; ``gate.execution.run`` → ``gate.execution.run``."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` is (``gate.report._render`` →
    ``gate.report``), or None when no part of it is private. ``gate._files`` belongs to
    ``gate`` itself: every module of the gate may use it."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


def _public_module(target: str) -> bool:
    """``gate.execution.run``: a public module of a layer package, which owns its private
    names (``gate.report`` and ``gate.report._render`` are owned by the package)."""
    parts = target.split(".")
    return len(parts) > 2 and not any(p.startswith("_") for p in parts[1:])


def private_imports() -> list[str]:
    modules = _modules()
    found = []
    for imp in _all_imports():
        owner = _private_owner(imp.target)
        if owner is not None and not _inside(imp.importer, owner):
            found.append(f"{imp.path}:{imp.line}: imports {imp.target} (private to {owner})")
            continue
        # a private name of another unit (``from gate.execution.run import _upstream``), or a
        # private submodule of another package (``from gate.report import _render``)
        for n in imp.names:
            if not n.startswith("_") or n.startswith("__"):
                continue
            sub = f"{imp.target}.{n}"
            owner = imp.target if sub in modules or _public_module(imp.target) \
                else _unit(imp.target)
            if not _inside(imp.importer, owner):
                found.append(f"{imp.path}:{imp.line}: imports {n} from {imp.target}")
    return found


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for imp in _all_imports():
        a, b = _unit(imp.importer), _unit(imp.target)
        if imp.target == "gate":  # ``from gate import __version__`` and the like
            b = "gate"
        graph.setdefault(a, set())
        if a != b and b != "gate":
            graph[a].add(b)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one unit (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def module_graph() -> dict[str, set[str]]:
    """Module → the modules of its own package it imports (``from gate.x import _y`` names
    the module ``gate.x._y``; a module's import of its own package's façade is not counted)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for imp in _all_imports():
        package = imp.importer.rpartition(".")[0]
        for target in (imp.target, *(f"{imp.target}.{n}" for n in imp.names)):
            if target in modules and target != imp.importer \
                    and target.rpartition(".")[0] == package:
                graph.setdefault(imp.importer, set()).add(target)
    return graph


#: the modules a task format's own data is read in: the formats' own modules
FORMAT_MODULES = "gate/formats/_"
NOT_A_FORMAT = ("__init__.py", "_task.py", "_contract.py")  # the contract and its data
FORMAT_DATA = ("native", "harbor")  # Task.native (Task.harbor, before the format held it)
FORMAT_NAME = ("layout", "format_name")


def format_reads() -> list[str]:
    """Reads of a task's format-own data (``x.native``, ``x.harbor``) outside the formats'
    modules, and comparisons of a task's format name anywhere outside ``gate/formats/``: what
    depends on the format is its format's answer."""
    found = []
    for p in _files():
        rel = str(p.relative_to(GATE.parent))
        in_format = rel.startswith(FORMAT_MODULES) and p.name not in NOT_A_FORMAT
        for node in ast.walk(_parse(p)):
            if isinstance(node, ast.Attribute) and node.attr in FORMAT_DATA and not in_format:
                found.append(f"{rel}:{node.lineno}: reads .{node.attr}")
            if isinstance(node, ast.Compare) and not rel.startswith("gate/formats/") and any(
                    isinstance(side, ast.Attribute) and side.attr in FORMAT_NAME
                    for side in (node.left, *node.comparators)):
                found.append(f"{rel}:{node.lineno}: compares a task's format name")
    return found


def long_modules() -> list[str]:
    return [str(p.relative_to(GATE.parent)) for p in _files()
            if len(p.read_text(encoding="utf-8").splitlines()) > 700]


def long_functions() -> list[str]:
    found = []
    for p in _files():
        for node in ast.walk(_parse(p)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 100:
                    found.append(f"{p.relative_to(GATE.parent)}:{node.name}")
    return found


def environ_writes() -> list[str]:
    """``os.environ[...] = ``, ``del os.environ[...]``, ``os.environ.update/pop/...``,
    ``os.putenv``/``os.unsetenv``."""
    def is_environ(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ"
                and isinstance(node.value, ast.Name) and node.value.id == "os")

    found = []
    for p in _files():
        for node in ast.walk(_parse(p)):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                targets = list(node.targets) if isinstance(node, ast.Assign | ast.Delete) \
                    else [node.target]
            hit = any(isinstance(t, ast.Subscript) and is_environ(t.value) for t in targets)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                f = node.func
                hit = hit or (is_environ(f.value) and f.attr in (
                    "update", "pop", "popitem", "setdefault", "clear", "__setitem__",
                    "__delitem__"))
                hit = hit or (isinstance(f.value, ast.Name) and f.value.id == "os"
                              and f.attr in ("putenv", "unsetenv"))
            if hit:
                found.append(f"{p.relative_to(GATE.parent)}:{getattr(node, 'lineno', 0)}")
    return found


def layer_breaks() -> list[str]:
    """Every import of a forbidden direction (``FORBIDDEN``), and every import by the verdict
    of a unit above it."""
    found = []
    for imp in _all_imports():
        for rule, importers, targets, exempt in FORBIDDEN:
            if any(_inside(imp.importer, u) for u in importers) \
                    and not any(_inside(imp.importer, u) for u in exempt) \
                    and any(_inside(imp.target, u) for u in targets):
                found.append(f"{imp.path}:{imp.line}: {rule} ({imp.target})")
        if _inside(imp.importer, "gate.compare") and imp.target != "gate" \
                and not _inside(imp.target, "gate.compare") \
                and not any(_inside(imp.target, u) for u in BELOW_THE_VERDICT):
            found.append(f"{imp.path}:{imp.line}: the verdict → above it ({imp.target})")
    return found


def provider_names() -> list[str]:
    """``path:line: name`` for each provider named by a gate module outside the ports."""
    found = []
    for p in _files():
        rel = str(p.relative_to(GATE.parent))
        if rel.startswith(UPSTREAM_PORTS) or rel in SIMULATOR_PROTOCOLS:
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{rel}:{n}: {m.group(0)}" for m in PROVIDER_NAMES.finditer(line)]
    return found


def upstream_imports() -> list[str]:
    """Every import by the upstream port of a unit above it."""
    return [f"{i.path}:{i.line}: the upstream port → above it ({i.target})"
            for i in _all_imports() if _inside(i.importer, "gate.upstream")
            and not any(_inside(i.target, u) for u in BELOW_THE_PORT)]


def units() -> set[str]:
    """The gate's units as its folders say them: each top-level module, each package."""
    return {_module_name(p) for p in GATE.glob("*.py") if p.name != "__init__.py"} \
        | {f"gate.{d.name}" for d in GATE.iterdir() if (d / "__init__.py").is_file()}


def _layer(unit: str) -> int | None:
    return next((i for i, (_, members) in enumerate(LAYERS) if unit in members), None)


def unplaced_units() -> list[str]:
    """Each unit that no layer (``LAYERS``) holds, or that more than one does."""
    placed = [u for _, members in LAYERS for u in members]
    return sorted(u for u in units() if placed.count(u) != 1)


def flat_modules() -> list[str]:
    """The modules ``gate/`` holds itself beyond ``FLAT``: each belongs in its layer's package."""
    return sorted(f"gate/{p.name}" for p in GATE.glob("*.py") if p.stem not in FLAT)


def upward_imports() -> list[str]:
    """Every import of a unit in a layer above the importer's (``LAYERS``' order)."""
    found = []
    for imp in _all_imports():
        if imp.target == "gate":  # ``from gate import __version__``
            continue
        here, there = _layer(_unit(imp.importer)), _layer(_unit(imp.target))
        if here is not None and there is not None and there > here:
            found.append(f"{imp.path}:{imp.line}: {LAYERS[here][0]} → {LAYERS[there][0]} "
                         f"({imp.target})")
    return found


def _known(kind: str, found: list[str]) -> list[str]:
    """What is found beyond the allow-list (entries match a finding's file, or the whole
    finding)."""
    allowed = KNOWN[kind]
    return [f for f in found if f not in allowed and f.split(":")[0] not in allowed]


def test_no_package_private_is_imported_from_outside_its_package() -> None:
    assert _known("private import", private_imports()) == []


def test_no_import_cycle_between_units() -> None:
    found = [" ↔ ".join(c) for c in cycles(unit_graph())]
    assert [c for c in found if c not in KNOWN["cycle"]] == []


def test_no_import_cycle_between_the_modules_of_a_package() -> None:
    found = [" ↔ ".join(c) for c in cycles(module_graph())]
    assert [c for c in found if c not in KNOWN["module cycle"]] == []


def test_only_a_format_reads_what_it_read_a_task_from() -> None:
    assert _known("format read", format_reads()) == []


def test_no_module_over_700_lines() -> None:
    assert _known("long module", long_modules()) == []


def test_no_function_over_100_lines() -> None:
    assert _known("long function", long_functions()) == []


def test_nothing_in_the_gate_writes_its_own_environment() -> None:
    assert _known("environ", environ_writes()) == []


def test_no_forbidden_import_direction() -> None:
    assert _known("layer", layer_breaks() + upstream_imports() + upward_imports()) == []


def test_every_unit_is_placed_in_one_layer() -> None:
    """A new package (or module) says which layer it is in, in ``LAYERS``."""
    assert unplaced_units() == []


def test_gate_holds_no_flat_module_beyond_the_short_list() -> None:
    """The folders say the layers: a module goes into its layer's package (``gate/execution``,
    ``gate/core``, ``gate/pool``, ...), not beside them at the top of ``gate/``."""
    assert flat_modules() == []


def test_no_module_outside_the_upstream_ports_names_a_provider() -> None:
    assert _known("provider name", provider_names()) == []


def test_the_allow_list_holds_only_what_is_still_true() -> None:
    """An entry whose offence is gone is dropped, so the list only ever shrinks."""
    found = {"long module": long_modules(), "long function": long_functions(),
             "private import": private_imports(), "environ": environ_writes(),
             "layer": layer_breaks() + upstream_imports() + upward_imports(),
             "format read": format_reads(),
             "provider name": provider_names(),
             "cycle": [" ↔ ".join(c) for c in cycles(unit_graph())],
             "module cycle": [" ↔ ".join(c) for c in cycles(module_graph())]}
    for kind, entries in KNOWN.items():
        for entry in entries:
            assert any(f == entry or f.split(":")[0] == entry for f in found[kind]), \
                f"{kind}: {entry} no longer offends; remove it from KNOWN"


@pytest.mark.parametrize("source, expected", [
    ("from gate.report._render import pct\n", ["imports gate.report._render"]),
    ("from gate.report import _render\n", ["imports _render from gate.report"]),
    ("from gate.execution.run import _upstream\n", ["imports _upstream from gate.execution.run"]),
    ("def f():\n    from gate.compare._stats import task_pvalues\n", ["gate.compare._stats"]),
    ("from gate._files import printable\nfrom gate.report import render_text\n", []),
])
def test_the_private_import_rule_sees_what_it_should(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expected: list[str]
) -> None:
    """The checker itself: a private import at module or function level is found; a façade
    import or the gate's own top-level helpers are not."""
    fake = tmp_path / "gate"
    (fake / "cli").mkdir(parents=True)
    for pkg in ("", "cli"):
        (fake / pkg / "__init__.py").write_text("")
    (fake / "cli" / "_x.py").write_text(source)
    monkeypatch.setitem(globals(), "GATE", fake)
    found = private_imports()
    assert len(found) == len(expected)
    for got, want in zip(found, expected, strict=True):
        assert want in got


@pytest.mark.parametrize("path, source, rule", [
    ("execution/run.py", "from gate.github import in_actions\n", "execution → the GitHub package"),
    ("sandbox/_x.py", "def f():\n    import gate.github\n", "execution → the GitHub package"),
    ("github/_x.py", "from gate.pool.baseline import promote\n", "the GitHub adapters → the judge"),
    ("core/fingerprint.py", "from gate.agents import kind\n", "core formats → agents"),
    ("report/_x.py", "from gate.github import x\n", "the report → GitHub"),
    ("report/_x.py", "from gate.ci import y\n", "the report → gate ci"),
    ("sandbox/_x.py", "from gate.meter import z\n", "the sandbox → the meter"),
    ("ci/_plan.py", "from gate.github import fetch_branch\n",
     "gate ci's stages → GitHub (not through the forge's adapter)"),
    ("ci/_forge.py", "def f():\n    from gate.github import x\n",
     "gate ci's stages → GitHub (not through the forge's adapter)"),
    ("ci/_github.py", "from gate.github import fetch_branch\n", None),
    ("core/history.py", "from gate.agents import kind\n", "core formats → agents"),
    ("compare/_x.py", "from gate.execution.run import RunRequest\n", "the verdict → above it"),
    ("compare/_x.py", "from gate.core.results import Results\n", None),
    ("execution/run.py", "from gate.sandbox import x\n", None),
])
def test_the_layer_rule_sees_each_forbidden_direction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, source: str, rule: str | None
) -> None:
    """The checker itself: each forbidden direction, put into a module on purpose, is found
    (a function-level import too); an allowed one is not."""
    fake = tmp_path / "gate"
    target = fake / path
    target.parent.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("")
    if target.parent != fake:
        (target.parent / "__init__.py").write_text("")
    target.write_text(source)
    monkeypatch.setitem(globals(), "GATE", fake)
    found = layer_breaks()
    assert ([rule] if rule else []) == [f.split(": ", 1)[1].rsplit(" (", 1)[0] for f in found]


@pytest.mark.parametrize("path, source, found", [
    ("meter/_x.py", 'HEADER = "x-api-key"\n', ["gate/meter/_x.py:1: x-api-key"]),
    ("execution/session.py", "# reads ANTHROPIC_BASE_URL\n",
     ["gate/execution/session.py:1: ANTHROPIC_"]),
    ("ci/_x.py", 'P = "/v1/messages"\nQ = "Bedrock"\n',
     ["gate/ci/_x.py:1: /v1/messages", "gate/ci/_x.py:2: Bedrock"]),
    ("agents/_x.py", '"""Vertex AI"""\n', ["gate/agents/_x.py:1: Vertex"]),
    ("upstream/_x.py", 'KEY = "ANTHROPIC_API_KEY"  # x-api-key, bedrock\n', []),
    ("sim/_bedrock.py", 'PATH = "/model/{id}/invoke"  # bedrock\n', []),
    ("sim/_server.py", 'PATH = "/model/{id}/invoke"  # bedrock\n',
     ["gate/sim/_server.py:1: bedrock"]),
    ("meter/_x.py", "# the anthropic-version header, an upstream's messages\n", []),
])
def test_the_provider_rule_sees_a_provider_named_outside_the_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, source: str, found: list[str]
) -> None:
    """The checker itself: a provider named in a module outside the ports is found, by line;
    inside a port (or the simulator's protocol module for an upstream) it is not."""
    target = tmp_path / "gate" / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    monkeypatch.setitem(globals(), "GATE", tmp_path / "gate")
    assert provider_names() == found


def test_the_upstream_port_imports_nothing_above_it(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "gate"
    (fake / "upstream").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "upstream" / "__init__.py").write_text("from gate.errors import BadInput\n")
    (fake / "upstream" / "_x.py").write_text("def f():\n    from gate.meter import x\n")
    monkeypatch.setitem(globals(), "GATE", fake)
    assert upstream_imports() == [
        "gate/upstream/_x.py:2: the upstream port → above it (gate.meter)"]


def test_the_cycle_rule_finds_a_cycle() -> None:
    assert cycles({"gate.a": {"gate.b"}, "gate.b": {"gate.c"}, "gate.c": {"gate.a"},
                   "gate.d": {"gate.a"}}) == [["gate.a", "gate.b", "gate.c"]]


@pytest.mark.parametrize("path, source, found", [
    ("sim/_x.py", "def f(task):\n    return task.harbor is None\n", ["reads .harbor"]),
    ("sandbox/_x.py", "def f(task):\n    return task.native.steps\n", ["reads .native"]),
    ("formats/_task.py", "def f(task):\n    return task.native\n", ["reads .native"]),
    ("formats/__init__.py", "def f(task):\n    return task.harbor\n", ["reads .harbor"]),
    ("execution/runner.py", "def f(t):\n    return t.layout == 'harbor'\n",
     ["compares a task's format name"]),
    ("formats/_harbor.py", "def f(task):\n    return task.native.steps\n", []),
    ("sim/_x.py", "import gate.formats._harbor_schema\n"
     "x = gate.formats._harbor_schema.AGENT_LOGS\n", []),
    ("sim/_x.py", "def f(task):\n    return task.solution_env is None\n", []),
])
def test_the_format_rule_sees_a_read_of_a_formats_own_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, source: str, found: list[str]
) -> None:
    """The checker itself: a branch on the Harbor data or the format's name outside the
    format is found (a format's own module may read its data)."""
    target = tmp_path / "gate" / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    monkeypatch.setitem(globals(), "GATE", tmp_path / "gate")
    assert [f.split(": ", 1)[1] for f in format_reads()] == found


def test_the_module_cycle_rule_sees_a_function_level_import_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker itself: two modules of a package importing each other, one of them only
    inside a function, are a cycle; a module importing its package's façade is not."""
    fake = tmp_path / "gate" / "sandbox"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("from gate.sandbox._docker import P\n")
    (fake / "_docker.py").write_text("from gate.sandbox import x\n"
                                     "from gate.sandbox._harbor import C\n")
    (fake / "_harbor.py").write_text("def f():\n    from gate.sandbox._docker import LABEL\n")
    monkeypatch.setitem(globals(), "GATE", tmp_path / "gate")
    assert cycles(module_graph()) == [["gate.sandbox._docker", "gate.sandbox._harbor"]]


def test_config_names_no_registry_the_run_checks_the_names_where_it_looks_them_up(
    tmp_path: Path,
) -> None:
    """gate.toml with an unknown agent kind or sandbox loads (config imports no registry);
    the run refuses it before anything starts, naming the file and the field."""
    from gate.core.config import load_config
    from gate.errors import BadInput
    from gate.execution.run import RunRequest, run_suite

    for body, field in (('[agent]\nkind = "robot"\n', "agent.kind: unknown agent kind"),
                        ('[suite]\nsandbox = "vm"\n', "suite.sandbox: unknown sandbox")):
        path = tmp_path / "gate.toml"
        path.write_text(body)
        cfg = load_config(path)
        with pytest.raises(BadInput) as err:
            run_suite(RunRequest(config=cfg, output=tmp_path / "r.json"))
        assert str(err.value).startswith(f"{path}: {field}"), str(err.value)
        assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("path, source, found", [
    ("core/_x.py", "def f():\n    from gate.execution import run\n",
     ["the core formats → execution (gate.execution)"]),
    ("compare/_x.py", "from gate.pool.baseline import promote\n",
     ["the verdict → main's pool (gate.pool.baseline)"]),
    ("errors.py", "from gate.upstream import ANTHROPIC\n",
     ["the foundation → the upstream port (gate.upstream)"]),
    ("execution/run.py", "from gate.sandbox import x\nfrom gate.pool.baseline import y\n", []),
    ("execution/run.py", "from gate import __version__\nfrom gate.core.results import y\n", []),
])
def test_the_layer_order_sees_an_import_upward(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, source: str, found: list[str]
) -> None:
    """The checker itself: an import of a higher layer is found (a function-level one too);
    one sideways, within a layer, or downward is not."""
    target = tmp_path / "gate" / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source)
    monkeypatch.setitem(globals(), "GATE", tmp_path / "gate")
    assert [f.split(": ", 1)[1] for f in upward_imports()] == found


def test_a_layer_packages_module_owns_its_private_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker itself: a sibling module importing ``_upstream`` from ``gate.execution.run``
    is found (the layer's package is not one unit for private names); a package's own private
    module's names stay the package's."""
    fake = tmp_path / "gate"
    (fake / "execution").mkdir(parents=True)
    (fake / "report").mkdir(parents=True)
    (fake / "execution" / "run.py").write_text("_upstream = 1\n")
    (fake / "execution" / "session.py").write_text("from gate.execution.run import _upstream\n")
    (fake / "report" / "_html.py").write_text("from gate.report._render import _lines\n")
    monkeypatch.setitem(globals(), "GATE", fake)
    assert private_imports() == [
        "gate/execution/session.py:1: imports _upstream from gate.execution.run"]


def test_the_layout_rule_sees_a_flat_module_and_an_unplaced_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker itself: a module put at the top of ``gate/`` is found, and so is a package
    no layer holds; the short list's modules are not."""
    fake = tmp_path / "gate"
    (fake / "widgets").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "run.py", "widgets/__init__.py"):
        (fake / name).write_text("")
    monkeypatch.setitem(globals(), "GATE", fake)
    assert flat_modules() == ["gate/run.py"]
    assert unplaced_units() == ["gate.run", "gate.widgets"]
