"""The files a pull request's run uploaded, as the trusted ``workflow_run`` job reads them
(the comment job posts the report, the report job publishes the page): regular files only,
bounded, UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gate.errors import BadInput

REPORT_LIMIT = 1_000_000  # bytes; our reports are a few KiB, a GitHub comment at most 65,536


def read_uploaded_report(path: Path) -> str:
    """The report a fork's run uploaded: a regular file, read as itself. Never followed through
    a symlink (to a file of the runner's, posted with our write token), never a FIFO that
    blocks the job, bounded, UTF-8."""
    return read_uploaded(path, REPORT_LIMIT, "posted")


def read_uploaded(path: Path, limit: int, what: str) -> str:
    """A file a fork's run uploaded, as :func:`read_uploaded_report` reads it (``what``: what
    is not done with it when it is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadInput(f"{path}: no report to post (download the artifact the pull_request "
                       "run uploaded first)") from None
    except OSError as exc:
        raise BadInput(f"{path}: not a regular file (a symlink?), not {what}: "
                       f"{exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BadInput(f"{path}: not a regular file, not {what}")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise BadInput(f"{path}: larger than {limit:,} bytes, not {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: not UTF-8 (byte {exc.start}), not {what}") from None
