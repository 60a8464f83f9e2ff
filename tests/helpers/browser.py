"""Headless Chromium for the tests that open a page: the system browser with Playwright, or a
skip that names the fix (a failure under ``GATE_REQUIRE_BROWSER=1``, as ``.ci/run`` sets)."""

from __future__ import annotations

import os
import shutil

import pytest


def find_browser() -> str:
    """The system Chromium's path, with Playwright importable; else skip (or fail)."""
    reason = None
    path = os.environ.get("GATE_CHROMIUM") or shutil.which("chromium") or \
        shutil.which("chromium-browser")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason is None and path is None:
        reason = "no Chromium (apt-get install chromium)"
    if reason is not None:
        if os.environ.get("GATE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"GATE_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(reason)
    assert path is not None
    return path
