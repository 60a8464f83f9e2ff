"""The base's yardstick and its baseline, opened one way for every judge of a pull request.

``gate ci`` on a PR (``_plan``), ``gate run --base-ref`` (``measured_by``) and ``gate compare
--base-ref`` all open ``ref``'s yardstick with ``open_base`` and read its baseline with
``base_baseline``: the same answer locally and in CI is a matter of structure, not of two
copies agreeing (tests/test_one_yardstick.py). Light on purpose (no runner, no GitHub
client): ``gate compare --base-ref`` loads only this and ``_verdict`` of ``gate ci``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gate import _git
from gate.core.config import GateConfig
from gate.core.results import Results, parse_results

if TYPE_CHECKING:
    from gate.execution.yardstick import Sources, Yardstick


@contextlib.contextmanager
def open_base(config: GateConfig, ref: str, *, root: Path | None = None,
              label: str | None = None, tasks_override: Path | None = None,
              sources: Sources | None = None) -> Iterator[Yardstick]:
    """``ref``'s yardstick for the checkout's ``config``: ``ref``'s tasks, ``[suite]``,
    ``[gate]``, ``[ci]``, baseline and history; only ``[agent]`` is the checkout's."""
    from gate.execution.yardstick import open_yardstick

    root = root if root is not None else _git.toplevel(config.root)
    with open_yardstick(config, root=root, ref=ref, label=label,
                        tasks_override=tasks_override, sources=sources) as ys:
        yield ys


def base_baseline(ys: Yardstick) -> Results | None:
    """The yardstick's baseline, parsed (None: there is none on the base)."""
    if ys.baseline_text is None:
        return None
    return parse_results(ys.baseline_text.encode(), f"{ys.baseline_rel} on {ys.baseline_from}",
                         "baseline")
