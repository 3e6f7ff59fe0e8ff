"""Intervals, the clustered suite interval, Welch deltas and the paired test (issue 19).

Every expected number is worked by hand in the comment beside it (t quantiles from a
printed Student t table: t(0.975; 2) = 4.3027, t(0.975; 4) = 2.7764)."""

from __future__ import annotations

import math

import pytest

from axis_eval.runs.aggregate import diff_reports, summarize
from axis_eval.runs.intervals import (
    median_rank,
    paired_test,
    t_cdf,
    t_critical,
    welch_interval,
)
from helpers.factories import manifest, pair, run_entry, score


@pytest.mark.parametrize(
    ("df", "table"),
    [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (30, 2.0423)],
)
def test_t_critical_matches_the_table(df: int, table: float) -> None:
    assert t_critical(df) == pytest.approx(table, abs=1e-4)


def test_t_cdf_closed_forms() -> None:
    # df 1 is Cauchy: F(t) = 1/2 + atan(t)/π; df 2: F(t) = 1/2 + t / (2√(2 + t²)).
    for t in (-3.0, -0.5, 0.0, 0.647, 2.0, 6.93):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-9)
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-9)


def test_median_rank_coverage() -> None:
    # coverage of [x(k), x(n−k+1)] = 1 − 2·P(Bin(n, ½) ≤ k − 1)
    assert median_rank(3) == (1, 0.75)  # 1 − 2/8: the range, short of 95 %
    assert median_rank(5) == (1, 0.9375)  # 1 − 2/32
    assert median_rank(6) == (1, 0.96875)  # k = 2 would be 1 − 2·7/64 = 0.78
    assert median_rank(9) == (2, pytest.approx(0.9609375))  # 1 − 2·(1 + 9)/512


def test_three_runs_seed_example() -> None:
    # 81, 87, 92: mean 86.667, s = √30.333 = 5.5076, se = 3.1798, half = 4.3027 × se = 13.68
    entry = pair(run_entry(1, 81), run_entry(2, 87), run_entry(3, 92))
    assert entry.intervals is not None
    axis = entry.intervals["axisScore"]
    assert (axis.n, axis.df, axis.mean) == (3, 2, 86.67)
    assert axis.low == pytest.approx(72.99, abs=0.01)
    assert axis.high == 100.0, "86.67 + 13.68 = 100.35, clipped to the scale"
    assert (axis.median, axis.median_low, axis.median_high) == (87, 81, 92)
    assert axis.median_coverage == 0.75
    assert set(entry.intervals) == {
        "axisScore",
        "goalAchievement",
        "environment",
        "service",
        "agent",
    }


def test_five_runs_and_a_dimension_of_its_own() -> None:
    # composite 70, 74, 78, 82, 86: mean 78, s = √40 = 6.3246, se = 2.8284, half = 7.853
    # goal 50 everywhere but run 5 at 100: mean 60, s = √500 = 22.36, se = 10, half = 27.76
    runs = [run_entry(i, v) for i, v in enumerate((70, 74, 78, 82), start=1)]
    runs.append(run_entry(5, score=score(86, goal_achievement=100)))
    for r in runs[:4]:
        assert r.score is not None
        r.score.goal_achievement = 50
    entry = pair(*runs)
    assert entry.intervals is not None
    axis = entry.intervals["axisScore"]
    assert (axis.low, axis.high) == (pytest.approx(70.15, abs=0.01), pytest.approx(85.85, abs=0.01))
    assert (axis.median_low, axis.median_high, axis.median_coverage) == (70, 86, 0.9375)
    goal = entry.intervals["goalAchievement"]
    assert goal.mean == 60 and goal.low == pytest.approx(32.24, abs=0.01)
    assert goal.high == pytest.approx(87.76, abs=0.01)


def test_nine_runs_median_interval_drops_the_extremes() -> None:
    entry = pair(*[run_entry(i, 56 + 4 * i) for i in range(1, 10)])  # 60, 64, … 92
    assert entry.intervals is not None
    axis = entry.intervals["axisScore"]
    assert (axis.median, axis.median_low, axis.median_high) == (76, 64, 88)


def test_under_three_scored_runs_no_interval() -> None:
    assert pair(run_entry(1, 80), run_entry(2, 90)).intervals is None
    # 3 runs, one withheld and one failed: 1 scored
    entry = pair(run_entry(1, 80), run_entry(2, "withheld"), run_entry(3, 70, status="failed"))
    assert entry.intervals is None


def test_agent_interval_clustered_by_scenario() -> None:
    # agent a: s1 = 80, 90 and its variant s1@fast = 85 (one cluster, mean 85); s2 = 70;
    # s3 = 60, 70, 80 (mean 70). Cluster means 85, 70, 70: mean 75, sd = √75 = 8.660,
    # se = 5, half = 4.3027 × 5 = 21.51. Agent b has one scenario: no interval.
    pairs = [
        pair(run_entry(1, 80), run_entry(2, 90), scenario="s1", agent="a"),
        pair(run_entry(1, 85), scenario="s1@fast", agent="a"),
        pair(run_entry(1, 70), scenario="s2", agent="a"),
        pair(run_entry(1, 60), run_entry(2, 70), run_entry(3, 80), scenario="s3", agent="a"),
        pair(run_entry(1, 50), run_entry(2, 60), scenario="s1", agent="b"),
    ]
    intervals = summarize(pairs, 0, 0).agent_intervals
    assert intervals is not None
    a, b = intervals
    assert (a.agent_name, a.clusters, a.runs, a.mean, a.df) == ("a", 3, 7, 75, 2)
    assert a.low == pytest.approx(53.49, abs=0.01) and a.high == pytest.approx(96.51, abs=0.01)
    assert (b.agent_name, b.clusters, b.mean, b.low, b.high) == ("b", 1, 55, None, None)
    assert b.note == "1 scenario scored: a suite interval needs 2 or more"


def test_interim_summaries_carry_the_suite_statistics_over() -> None:
    # The writer's interim flushes pass the last summary: counts are recomputed, the
    # suite-wide intervals are not (they are recomputed at the final, forced flush).
    first = [pair(run_entry(1, 80), scenario="s1", agent="a")]
    earlier = summarize(first, 0, 0)
    more = [*first, pair(run_entry(1, 60), scenario="s2", agent="a")]
    interim = summarize(more, 0, 0, statistics_of=earlier)
    assert interim.total == 2 and interim.average_axis_score == 70
    assert interim.agent_intervals == earlier.agent_intervals
    final = summarize(more, 0, 0)
    assert final.agent_intervals is not None and final.agent_intervals[0].clusters == 2
    assert final.agent_intervals != earlier.agent_intervals


def test_welch_interval() -> None:
    # A 70, 72, 74 and B 75, 77, 79: Δ 5; se² = 4/3 + 4/3, se = 1.633; df = 4.0 exactly;
    # half = 2.7764 × 1.633 = 4.534
    interval = welch_interval([70, 72, 74], [75, 77, 79])
    assert interval is not None
    assert (interval.mean_delta, interval.df) == (5, 4.0)
    assert interval.low == pytest.approx(0.47, abs=0.01)
    assert interval.high == pytest.approx(9.53, abs=0.01)
    assert welch_interval([80], [70, 71]) is None
    flat = welch_interval([80, 80], [83, 83])
    assert flat is not None and (flat.low, flat.high, flat.df) == (3, 3, None)


def test_diff_reports_intervals_and_paired_test() -> None:
    # Deltas of the mean composites: p1 72 → 77 (+5), p2 80 → 83 (+3), p3 62 → 66 (+4).
    # Paired: mean 4, sd 1, se = 1/√3 = 0.5774, t = 6.928 on 2 df;
    # p = 2·(1 − F(6.928)), F = 1/2 + t/(2√(2 + t²)) = 0.98990 → p = 0.0202;
    # interval 4 ± 4.3027 × 0.5774 = [1.52, 6.48].
    a = manifest(
        pair(*[run_entry(i, v) for i, v in enumerate((70, 72, 74), 1)], scenario="p1"),
        pair(*[run_entry(i, 80) for i in (1, 2, 3)], scenario="p2"),
        pair(*[run_entry(i, v) for i, v in enumerate((60, 62, 64), 1)], scenario="p3"),
        pair(run_entry(1, 50), scenario="gone"),
        report_id="A",
    )
    b = manifest(
        pair(*[run_entry(i, v) for i, v in enumerate((75, 77, 79), 1)], scenario="p1"),
        pair(*[run_entry(i, 83) for i in (1, 2, 3)], scenario="p2"),
        pair(*[run_entry(i, v) for i, v in enumerate((64, 66, 68), 1)], scenario="p3"),
        report_id="B",
    )
    diff = diff_reports(a, b)
    p1 = diff.pairs[0].deltas[0].interval
    assert p1 is not None and (p1.low, p1.high) == (
        pytest.approx(0.47, abs=0.01),
        pytest.approx(9.53, abs=0.01),
    )
    test = diff.paired
    assert test is not None
    assert (test.n, test.mean_delta, test.stdev, test.df) == (3, 4, 1, 2)
    assert test.t == pytest.approx(6.928, abs=1e-3)
    assert test.p_value == pytest.approx(0.0202, abs=1e-4)
    assert test.low == pytest.approx(1.52, abs=0.01) and test.high == pytest.approx(6.48, abs=0.01)


def test_paired_test_edges() -> None:
    assert paired_test([]).note == "0 pair in both reports scored: a paired test needs 2 or more"
    one = paired_test([2.0])
    assert (one.n, one.mean_delta, one.p_value) == (1, 2, None)
    same = paired_test([3.0, 3.0])
    assert (same.p_value, same.low, same.high) == (0.0, 3, 3)
    none = paired_test([0.0, 0.0])
    assert (none.p_value, none.t) == (1.0, 0.0)


def test_single_runs_say_noise_unmeasured() -> None:
    a = manifest(
        pair(run_entry(1, 80), scenario="single"),
        pair(run_entry(1, 80), scenario="one-then-many"),
        pair(run_entry(1, 80), run_entry(2, 81), run_entry(3, 82), scenario="many-then-one"),
        pair(run_entry(1, 80), scenario="same"),
        report_id="A",
    )
    b = manifest(
        pair(run_entry(1, 70), scenario="single"),
        pair(run_entry(1, 90), run_entry(2, 91), run_entry(3, 92), scenario="one-then-many"),
        pair(run_entry(1, 70), scenario="many-then-one"),
        pair(run_entry(1, 80), scenario="same"),
        report_id="B",
    )
    by_key = {p.scenario_key: p for p in diff_reports(a, b).pairs}
    single = by_key["single"]
    assert single.verdict == "unmeasured" and not single.noise_measured
    assert single.deltas[0].delta == -10 and single.deltas[0].interval is None
    assert by_key["one-then-many"].verdict == "unmeasured", "A, the reference, has no σ"
    # A's three runs measured σ = 1 (band 2): a drop of 11 is a regression
    assert by_key["many-then-one"].verdict == "regressed"
    assert by_key["same"].verdict == "unchanged", "no change needs no noise to say so"
