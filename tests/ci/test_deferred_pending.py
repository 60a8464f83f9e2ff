"""The pending comment the action's last step posts is read as itself: never through a
symlink (to a file of the runner's, posted with the write token), never a FIFO, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.errors import BadInput
from gate.github import _deferred


def test_a_symlinked_pending_comment_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "runner-secret.json"
    secret.write_text('{"state": "final"}')
    link = tmp_path / "pending.json"
    link.symlink_to(secret)
    with pytest.raises(BadInput, match=r"pending\.json: cannot read pending comment: .*symbolic"):
        _deferred.read_pending(link)


def test_a_fifo_or_an_oversized_pending_comment_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="not a regular file"):
        _deferred.read_pending(fifo)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (_deferred.PENDING_LIMIT + 1))
    with pytest.raises(BadInput, match="too large"):
        _deferred.read_pending(big)
