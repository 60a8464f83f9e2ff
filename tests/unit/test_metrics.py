"""The table of metrics (gate/core/metrics.py) is consistent with what reads it."""

from __future__ import annotations

from gate.core.config import GateSettings
from gate.core.metrics import GATING, METRICS, PERMUTED


def test_every_margin_is_a_gate_setting_and_block_on_defaults_to_every_gating_metric() -> None:
    settings = GateSettings()
    for m in METRICS:
        if m.margin is not None:
            assert isinstance(getattr(settings, m.margin), float), m.name
    assert settings.block_on == list(GATING)
    assert [m.name for m in METRICS if not m.gates] == ["duration"]
    assert len({m.name for m in METRICS}) == len({m.label for m in METRICS}) == len(METRICS)
    # the comment's first screen holds four columns and the four gating metrics
    assert [m.name for m in METRICS if m.first_screen] == list(GATING)
    assert all(m.kind != "pass" for m in PERMUTED)
