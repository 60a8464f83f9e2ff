"""Terminal output: rich tables on a terminal, plain aligned text elsewhere (CI logs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table


def console() -> Console:
    plain = not sys.stdout.isatty() or bool(os.environ.get("CI"))
    return Console(no_color=plain, highlight=False, soft_wrap=True,
                   width=10_000 if plain else None)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> Table:
    # box-drawing on a terminal; plain aligned columns in logs and pipes
    t = Table(*headers, box=box.SIMPLE_HEAD if sys.stdout.isatty() else None, pad_edge=False)
    for row in rows:
        t.add_row(*(str(c) for c in row))
    return t
