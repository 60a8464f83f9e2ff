"""Main's pool: the pooled baseline, the refresh that writes main's files, and the evidence
a PR's runs are read against it.

``baseline`` (pooling results into the committed baseline), ``refresh`` (where main's files
live and what a refresh starts from), ``evidence`` (the comment's evidence: the PR's runs
beside main's). The modules are public and imported by their full name. Above the core
formats, the verdict and the report; below ``gate.ci`` and the CLI.
"""

from __future__ import annotations

__all__ = ["baseline", "evidence", "refresh"]
