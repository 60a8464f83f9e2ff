"""A façade whose names load on first use (PEP 562): ``gate compare`` needs the judge, not
the runner; ``gate run``'s progress needs the formatter, not Jinja2. One implementation for
every lazy package."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str],
               namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``where`` maps each exported name to its private module
    (``"_module"``, or ``"_module:attr"`` where the name differs); the value is cached in the
    package's ``namespace`` so the next lookup is a plain attribute."""
    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where[name].partition(":")
        value = getattr(importlib.import_module(f"{package}.{module}"), attr or name)
        namespace[name] = value
        return value

    return __getattr__
