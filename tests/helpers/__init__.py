"""What the tests share, in one place: tiny suites, the gate-ci project, the fake GitHub, the
docker engine's checks, report fixtures.

Test modules import these as ``tests.helpers.<module>`` and nothing else of the tests: no test
module imports another test module or a conftest (tests/unit/test_test_layout.py keeps it so).
Fixtures several modules use are declared once, in the conftest.py of the folder that holds
them all. ``tests.`` resolves under ``python -m pytest`` (the working directory) and bare
``pytest`` alike (pyproject's ``pythonpath = ["."]``).
"""

from __future__ import annotations

from pathlib import Path

#: the repository's root (this file is tests/helpers/__init__.py)
ROOT = Path(__file__).resolve().parents[2]
