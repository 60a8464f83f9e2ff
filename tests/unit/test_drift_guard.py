"""The drift guard: main's own A/A checks decide whether a pass-rate regression needs more."""

from __future__ import annotations

from gate.compare._drift import MIN_AA_CHECKS, drift_guard
from gate.core.history import HistoryEntry


def _entries(n: int, blocked: int, rates: list[float], fp: str = "fp") -> list[HistoryEntry]:
    return [HistoryEntry(created_at=f"2026-11-{i + 1:02d}", fingerprint=fp,
                         pass_rate=rates[i % len(rates)],
                         verdict="regression" if i < blocked else "pass") for i in range(n)]


def test_quiet_main_leaves_the_verdict_alone() -> None:
    stands, note = drift_guard(_entries(20, 0, [0.8]), fingerprint="fp", alpha=0.01,
                               candidate_pass_rate=0.7)
    assert stands and note is None


def test_too_few_checks_leave_the_verdict_alone() -> None:
    stands, note = drift_guard(_entries(MIN_AA_CHECKS - 1, 5, [0.8]), fingerprint="fp",
                               alpha=0.01, candidate_pass_rate=0.7)
    assert stands and note is None


def test_drifting_main_needs_the_pr_below_its_floor() -> None:
    drifting = _entries(20, 3, [0.85, 0.75, 0.8])  # 15 % A/A blocks > 2 %
    stands, note = drift_guard(drifting, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.78)
    assert not stands and note is not None and "not blocking" in note and "75.0%" in note
    stands, note = drift_guard(drifting, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.6)
    assert stands and note is not None and "regression stands" in note


def test_only_the_same_agent_counts() -> None:
    other = _entries(20, 10, [0.9], fp="other")
    stands, note = drift_guard(other, fingerprint="fp", alpha=0.01, candidate_pass_rate=0.5)
    assert stands and note is None


def test_gate_compare_applies_the_guard_with_history(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Locally, `gate compare --history` gives the answer `gate ci` gives on the PR."""
    import json

    import numpy as np
    from click.testing import CliRunner

    from gate.cli import main
    from gate.compare._synthetic import reference_rates, synthetic_results
    from gate.core.results import write_results

    rates = reference_rates(15)
    rng = np.random.default_rng(1)
    base = synthetic_results(rates, 20, rng)
    broken = synthetic_results([0.0] * 5 + rates[5:], 5, rng)  # five tasks broken
    write_results(tmp_path / "b.json", base)
    write_results(tmp_path / "r.json", broken)
    args = ["compare", str(tmp_path / "b.json"), str(tmp_path / "r.json"), "--config",
            str(tmp_path / "none.toml")]
    (tmp_path / "none.toml").write_text("")
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 1, plain.output
    history = tmp_path / "h.jsonl"
    floor = broken.summary.pass_rate
    history.write_text("".join(json.dumps(e.model_dump()) + "\n" for e in _entries(
        12, 6, [floor or 0.0, 0.9], fp=base.agent.fingerprint)))
    guarded = CliRunner().invoke(main, [*args, "--history", str(history)])
    assert guarded.exit_code == 0, guarded.output
    assert "Drift guard" in guarded.output


def test_gate_report_applies_the_guard_as_gate_compare_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`gate report --history` judges with the same history as `gate compare --history`: the
    page's verdict is the one the terminal and the PR's comment give (one verdict)."""
    import json

    import numpy as np
    from click.testing import CliRunner

    from gate.cli import main
    from gate.compare._synthetic import reference_rates, synthetic_results
    from gate.core.results import write_results

    rates = reference_rates(15)
    rng = np.random.default_rng(1)
    base = synthetic_results(rates, 20, rng)
    broken = synthetic_results([0.0] * 5 + rates[5:], 5, rng)  # five tasks broken
    write_results(tmp_path / "b.json", base)
    write_results(tmp_path / "r.json", broken)
    (tmp_path / "none.toml").write_text("")
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(e.model_dump()) + "\n" for e in _entries(
        12, 6, [broken.summary.pass_rate or 0.0, 0.9], fp=base.agent.fingerprint)))
    config = ["--config", str(tmp_path / "none.toml")]
    for extra, said in (([], "regression"), (["--history", str(history)], "pass")):
        judged = CliRunner().invoke(main, ["compare", str(tmp_path / "b.json"),
                                           str(tmp_path / "r.json"), "--format", "json",
                                           *config, *extra])
        verdict = json.loads(judged.stdout)
        assert verdict["verdict"] == said, judged.output
        page = tmp_path / f"{said}.html"
        written = CliRunner().invoke(main, ["report", str(tmp_path / "r.json"), "--baseline",
                                            str(tmp_path / "b.json"), "--html", str(page),
                                            *config, *extra])
        assert written.exit_code == 0, written.output
        assert f"report written ({said}, " in written.output
        text = page.read_text()
        assert f'<header class="verdict v-{said}">' in text
        assert ("(drift guard)" in text) == (said == "pass")
    missing = CliRunner().invoke(main, ["report", str(tmp_path / "r.json"), "--baseline",
                                        str(tmp_path / "b.json"), "--html",
                                        str(tmp_path / "x.html"), *config,
                                        "--history", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    assert missing.stderr.strip().splitlines() == [
        f"gate: error: {tmp_path / 'nope.jsonl'}: history not found"]
