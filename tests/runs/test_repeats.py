"""Repeats: the representative, spread, reliability, pass@k / pass^k and the gate (issue 7)."""

from __future__ import annotations

import pytest

from axis_eval.runs.aggregate import (
    PassGate,
    describe_reliability,
    diff_reports,
    noise_band,
    pass_at_k,
    pass_hat_k,
    pick_representative,
    refresh_pair,
    reliability,
    representative,
    spread,
)
from helpers.factories import manifest, pair, run_entry, score


def test_seed_example_81_87_92() -> None:
    entry = pair(run_entry(1, 81), run_entry(2, 87), run_entry(3, 92))
    assert entry.representative_run_index == 2
    assert entry.score is not None and entry.score.axis_score == 87
    assert entry.spread is not None
    stats = entry.spread.axis_score
    assert (entry.spread.n, stats.median, stats.min, stats.max) == (3, 87, 81, 92)
    assert stats.mean == 86.67 and stats.stdev == 5.51  # printed as σ 5.5
    assert entry.spread.representative_run_index == 2
    dumped = entry.model_dump(mode="json", by_alias=True)["spread"]
    assert dumped == {
        "n": 3,
        "axisScore": {"median": 87.0, "min": 81.0, "max": 92.0, "mean": 86.67, "stdev": 5.51},
        "representativeRunIndex": 2,
    }


def test_order_does_not_matter() -> None:
    assert pair(run_entry(1, 81), run_entry(2, 92), run_entry(3, 87)).representative_run_index == 3


def test_ties_go_to_the_lowest_index() -> None:
    assert pick_representative({3: 70.0, 1: 90.0, 2: 90.0, 4: 70.0, 5: 80.0}) == 5
    assert pick_representative({2: 80.0, 1: 80.0, 3: 80.0}) == 1
    assert pick_representative({}) is None


def test_crash_is_excluded_and_even_count_uses_a_midpoint() -> None:
    # 3 runs, 1 crash: scored 87 and 84, median 85.5; both 1.5 away → run 1 (lowest index).
    entry = pair(run_entry(1, 87), run_entry(2, 84), run_entry(3, status="failed", error="boom"))
    assert entry.status == "completed" and not entry.failed
    assert entry.representative_run_index == 1
    assert entry.score is not None and entry.score.axis_score == 87, "the run's own composite"
    assert entry.spread is not None and entry.spread.axis_score.median == 85.5
    assert entry.reliability is not None
    assert (entry.reliability.succeeded, entry.reliability.total) == (2, 3)
    assert entry.error is None


def test_withheld_leaves_the_denominator() -> None:
    entry = pair(run_entry(1, 80), run_entry(2, "withheld"), run_entry(3, 90))
    rel = entry.reliability
    assert rel is not None and (rel.succeeded, rel.total, rel.withheld) == (2, 2, 1)
    assert describe_reliability(rel) == "2/2 scored (1 withheld)"
    assert entry.representative_run_index == 1  # median 85, tie → lowest index
    assert entry.spread is not None and entry.spread.n == 2


def test_failed_withheld_and_cancelled() -> None:
    rel = reliability(
        [
            run_entry(1, 70),
            run_entry(2, "withheld"),
            run_entry(3, status="failed"),
            run_entry(4, status="cancelled"),
        ]
    )
    assert (rel.succeeded, rel.total, rel.withheld) == (1, 2, 1)


def test_pair_completed_when_any_run_scored_failed_when_none() -> None:
    assert (
        pair(run_entry(1, status="failed"), run_entry(2, 40), run_entry(3, status="failed")).status
        == "completed"
    )
    every_withheld = pair(
        run_entry(1, "withheld"), run_entry(2, "withheld"), run_entry(3, status="failed")
    )
    assert every_withheld.status == "failed" and every_withheld.failed
    assert every_withheld.spread is None


def test_no_score_pair_completes_when_any_run_completed() -> None:
    entry = pair(run_entry(1, status="failed"), run_entry(2), run_entry(3))
    assert entry.status == "completed"
    assert entry.representative_run_index == 2
    assert entry.spread is None and entry.pass_rates is None
    rel = entry.reliability
    assert rel is not None and (rel.succeeded, rel.total) == (2, 3)
    assert describe_reliability(rel, scored=False) == "2/3 completed"


def test_single_run_spread_has_no_sigma() -> None:
    entry = pair(run_entry(1, 77))
    assert entry.spread is not None and entry.spread.axis_score.stdev is None
    assert spread([run_entry(1, status="failed")]) is None


def test_representative_is_one_function() -> None:
    runs = [
        run_entry(1, 60),
        run_entry(2, status="failed"),
        run_entry(3, 90),
        run_entry(4, 70),
        run_entry(5, "withheld"),
    ]
    rep = representative(runs)
    assert rep is not None
    assert rep.run_index == pick_representative({1: 60.0, 3: 90.0, 4: 70.0}) == 4


@pytest.mark.parametrize(
    ("n", "c", "k", "at", "hat"),
    [
        (3, 3, 3, 1.0, 1.0),
        (3, 0, 1, 0.0, 0.0),
        (3, 2, 1, 2 / 3, 2 / 3),
        (3, 2, 2, 1.0, 1 / 3),
        (3, 1, 2, 2 / 3, 0.0),
        (5, 2, 3, 0.9, 0.0),
        (5, 4, 3, 1.0, 0.4),
    ],
)
def test_pass_at_k_and_pass_hat_k(n: int, c: int, k: int, at: float, hat: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(at)
    assert pass_hat_k(n, c, k) == pytest.approx(hat)


def test_pass_rates_per_pair() -> None:
    entry = pair(
        run_entry(1, 81),
        run_entry(2, 70),
        run_entry(3, status="failed"),
        run_entry(4, "withheld"),
        run_entry(5, 90),
    )
    rates = entry.pass_rates
    assert rates is not None
    # counted: 81, 70, crash, 90 (the withheld run leaves); passing (≥ 75): 81 and 90
    assert (rates.n, rates.passed, rates.rate, rates.pass_score) == (4, 2, 0.5, 75)
    assert rates.pass_at_k == [0.5, 0.8333, 1.0, 1.0]
    assert rates.pass_hat_k == [0.5, 0.1667, 0.0, 0.0]
    assert not rates.gate_failed and entry.status == "completed"
    strict = pair(
        run_entry(1, 81), run_entry(2, 70), run_entry(3, 90), gate=PassGate(pass_score=85)
    )
    assert strict.pass_rates is not None and strict.pass_rates.passed == 1


def test_min_pass_rate_gate_fails_the_pair() -> None:
    gate = PassGate(pass_score=75, min_pass_rate=0.67)
    # 2/3 = 0.667 < 0.67
    entry = pair(run_entry(1, 80), run_entry(2, 60), run_entry(3, 90), gate=gate)
    assert entry.status == "failed" and entry.failed
    assert entry.pass_rates is not None and entry.pass_rates.gate_failed
    assert entry.error == "pass rate 2/3 (score ≥ 75) is below --min-pass-rate 0.67"
    assert entry.representative_run_index == 1  # still reported
    ok = pair(
        run_entry(1, 80), run_entry(2, 60), run_entry(3, 90), gate=PassGate(min_pass_rate=0.6)
    )
    assert ok.status == "completed" and ok.error is None
    # a re-score (refresh without a gate) keeps the gate recorded on the pair
    refresh_pair(entry)
    assert entry.status == "failed" and entry.pass_rates is not None
    assert entry.pass_rates.min_pass_rate == 0.67


def test_noise_band() -> None:
    assert noise_band(None) == 1.0
    assert noise_band(0.2) == 1.0
    assert noise_band(5.51) == pytest.approx(11.02)


def test_diff_reports_uses_report_a_noise() -> None:
    a = manifest(
        pair(run_entry(1, 81), run_entry(2, 87), run_entry(3, 92), scenario="noisy"),
        pair(run_entry(1, 80), scenario="single"),
        pair(run_entry(1, 50), scenario="gone"),
        report_id="A",
    )
    b = manifest(
        pair(run_entry(1, 95), run_entry(2, 96), run_entry(3, 97), scenario="noisy"),
        pair(run_entry(1, score=score(78, goal_achievement=60)), scenario="single"),
        pair(run_entry(1, 70), scenario="fresh"),
        report_id="B",
    )
    diff = diff_reports(a, b)
    by_key = {p.scenario_key: p for p in diff.pairs}
    noisy = by_key["noisy"]
    assert noisy.deltas[0].delta == 9 and noisy.deltas[0].noise == 11.02
    assert noisy.verdict == "unchanged" and noisy.noise_measured
    single = by_key["single"]
    assert not single.noise_measured
    assert single.deltas[0].delta == -2 and single.deltas[0].changed
    assert single.verdict == "unmeasured", "one run a side: no noise to call it regressed"
    goal = single.deltas[1]
    assert (goal.name, goal.delta, goal.changed) == ("goalAchievement", -20, True)
    assert by_key["fresh"].verdict == "new" and by_key["gone"].verdict == "vanished"
    assert [p.scenario_key for p in diff.pairs] == ["noisy", "single", "fresh", "gone"]
