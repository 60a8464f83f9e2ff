"""The builtin agent's system prompt: a Jinja2 template a pull request controls, rendered in
the gate's own process (next to the meter and its key), so it gets exactly the documented
Jinja and nothing else.

Two layers. At load, the template's syntax tree is checked against an allow-list: the four
variables (``task_id``, ``workdir``, ``date``, ``now``), conditionals (``if``/``elif``/``else``,
the inline ``x if c else y``), comparisons, ``in``, ``and``/``or``/``not``, tests, ``~`` and
``+``, literals, a constant index or slice, and string filters and methods that cannot grow
their input. Anything else — another name (``lipsum``, ``cycler``, ``self``, ``range``), an
attribute that is not such a method, a computed index, ``format``, ``attr``, ``set``, ``for``,
macros, blocks, includes, ``*`` — is refused (exit 2 naming the file) even inside a branch
only one task or one date would take, so no template reaches a run that would trip the
sandbox later. With no loop, assignment or repeating operation, the text rendered is at most
about the template's size times its longest variable: a prompt cannot exhaust the gate's memory
either. Then every render goes through Jinja's immutable sandbox with no globals, in case the
check ever misses something.
"""

from __future__ import annotations

from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

DEFAULT_SYSTEM_PROMPT = """\
You are a careful software engineer working in a repository at {{ workdir }}.
Use the tools to inspect the files, make the change, and check it. When you are done,
reply with a short summary; if the task asks a question, state the answer plainly.
"""
VARIABLES = ("task_id", "workdir", "date", "now")
SAMPLE = {"task_id": "t", "workdir": "/w", "date": "2026-01-01",
          "now": "2026-01-01T00:00:00+00:00"}

_NODES = (
    nodes.Template, nodes.Output, nodes.TemplateData, nodes.Const, nodes.Name, nodes.If,
    nodes.CondExpr, nodes.Compare, nodes.Operand, nodes.And, nodes.Or, nodes.Not,
    nodes.Concat, nodes.Add, nodes.List, nodes.Tuple, nodes.Test, nodes.Filter, nodes.Call,
    nodes.Getattr, nodes.Getitem, nodes.Slice, nodes.Keyword,
)
_FILTERS = frozenset({
    "abs", "capitalize", "count", "e", "escape", "first", "float", "int", "last", "length",
    "lower", "reverse", "round", "string", "title", "trim", "truncate", "upper", "wordcount",
})
_METHODS = frozenset({
    "capitalize", "count", "endswith", "find", "isalnum", "isalpha", "isdigit", "islower",
    "isupper", "lower", "lstrip", "removeprefix", "removesuffix", "rfind", "rsplit", "rstrip",
    "split", "startswith", "strip", "title", "upper",
})


class PromptError(jinja2.TemplateError):
    """A template that asks for more than the documented Jinja (``lineno``: where)."""

    def __init__(self, message: str, lineno: int | None) -> None:
        super().__init__(message)
        self.lineno = lineno


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, autoescape=False,
                                        keep_trailing_newline=True)
    env.globals.clear()  # no lipsum, cycler, joiner, namespace, range, dict
    env.filters = {k: v for k, v in env.filters.items() if k in _FILTERS}
    return env


def _refusal(node: nodes.Node, methods: set[int]) -> str | None:
    """Why ``node`` is outside the documented Jinja, or None."""
    if not isinstance(node, _NODES):
        return f"{type(node).__name__.lower()} is not allowed"
    if isinstance(node, nodes.Name) and node.name not in VARIABLES:
        return f"{node.name!r} is undefined"
    if isinstance(node, nodes.Getattr) and not (id(node) in methods
                                                and node.attr in _METHODS):
        return f"attribute {node.attr!r} is not allowed"
    if isinstance(node, nodes.Getitem) and not (
            isinstance(node.arg, nodes.Slice) or (isinstance(node.arg, nodes.Const)
                                                  and type(node.arg.value) is int)):
        return "only a constant index or slice is allowed"
    if isinstance(node, nodes.Call) and not isinstance(node.node, nodes.Getattr):
        return "only a string method may be called"
    if isinstance(node, nodes.Filter) and node.name not in _FILTERS:
        return f"filter {node.name!r} is not allowed"
    if isinstance(node, nodes.Filter | nodes.Test | nodes.Call) and (
            node.dyn_args or node.dyn_kwargs):
        return "*args and **kwargs are not allowed"
    if isinstance(node, nodes.Keyword) and node.key == "attribute":
        return "a filter's attribute= is not allowed"
    return None


def check(template: str) -> None:
    """Refuse (``PromptError``, or Jinja's own syntax error) what is outside the documented
    Jinja, wherever it is in the template."""
    tree = _environment().parse(template)
    methods = {id(c.node) for c in tree.find_all(nodes.Call)}
    for node in _walk(tree):
        why = _refusal(node, methods)
        if why:
            raise PromptError(f"{why}: only the documented Jinja (the variables, conditionals, "
                              "string filters and methods; no set or for)", node.lineno)


def _walk(node: nodes.Node) -> Any:
    yield node
    for child in node.iter_child_nodes():
        yield from _walk(child)


def compile_prompt(template: str) -> jinja2.Template:
    """The checked template, rendered in the sandbox; tried once with sample values, so an
    error shows now, as bad configuration, not as a failed run per task later."""
    try:
        check(template)
        compiled = _environment().from_string(template)
    except RecursionError:
        raise PromptError("nested too deeply", None) from None
    render(compiled, SAMPLE)
    return compiled


def render(template: jinja2.Template, values: dict[str, str]) -> str:
    """``template`` with ``values``; whatever goes wrong is a ``TemplateError`` (a string
    compared with a number raises ``TypeError``, say): the prompt's error, never the gate's."""
    try:
        return template.render(**values)
    except jinja2.TemplateError:
        raise
    except Exception as exc:
        raise jinja2.TemplateError(f"{type(exc).__name__}: {exc}") from None
