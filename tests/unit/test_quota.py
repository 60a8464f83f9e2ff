"""The measure behind ``[suite] disk_mb`` (gate/sandbox/_quota.py): what a run's files hold on
the disk, each counted once, and a watch that stops the run once past its limit (the runs
themselves: tests/sandbox/test_disk_quota.py)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from gate.sandbox._quota import MB, DiskLimit, DiskWatch, RunStop, tree_bytes


def test_files_count_the_blocks_they_hold_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "data").write_bytes(os.urandom(4 * MB))
    base = tree_bytes(root)
    assert 4 * MB <= base < 4 * MB + 64 * 1024
    for i in range(5):  # a hard link is the same blocks
        os.link(root / "sub" / "data", root / f"link{i}")
    outside = tmp_path / "outside"
    outside.write_bytes(os.urandom(2 * MB))
    (root / "out").symlink_to(outside)  # never followed
    (root / "dir-out").symlink_to(tmp_path)
    with (root / "sparse").open("wb") as fh:  # a hole holds no disk
        fh.truncate(1 << 40)
    assert tree_bytes(root) - base < 64 * 1024


def test_the_watch_stops_the_run_once_past_and_reads_the_jobs_cancel_through() -> None:
    used = [0]
    job = threading.Event()
    stop = RunStop(job)
    watch = DiskWatch(DiskLimit(3), lambda: used[0], stop, every=0.05)
    try:
        time.sleep(0.2)
        assert not stop.is_set() and watch.over is None
        used[0] = 3 * MB + 1
        deadline = time.monotonic() + 5
        while not stop.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stop.is_set() and watch.over == "the run wrote 4 MB, past [suite] disk_mb = 3"
        used[0] = 0  # what it wrote then deleted: still past
        assert watch.check() == watch.over
    finally:
        watch.close()
    other = RunStop(job)
    assert not other.is_set()
    job.set()
    assert other.is_set()
