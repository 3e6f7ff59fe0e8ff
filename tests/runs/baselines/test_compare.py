"""Comparing a report with a baseline: the noise band, the floor, reliability, new/vanished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axis_eval.cli.baseline import render_comparison
from axis_eval.report.models import Reliability
from axis_eval.runs.baseline_models import Baseline
from axis_eval.runs.baselines import (
    compare,
    entry_from_pair,
    load_baseline,
    noise_band,
    reliability_delta,
    set_baseline,
)
from helpers.factories import score

from .helpers import Run, baseline_run, pair, report


def baseline_of(*runs: Run, scenario: str = "s", agent: str = "a") -> Baseline:
    m = report("2026-01-01-000000", pair(scenario, agent, *runs))
    entry = entry_from_pair(m.results[0], m)
    assert entry is not None
    return Baseline(
        name="default",
        created_at="t",
        updated_at="t",
        results={scenario: {agent: entry}},
    )


def compare_runs(base: tuple[Run, ...], now: tuple[Run, ...]):  # type: ignore[no-untyped-def]
    result = compare(baseline_of(*base), report("2026-01-02-000000", pair("s", "a", *now)))
    assert len(result.entries) == 1
    return result, result.entries[0]


def test_entry_records_runs_sigma_and_reliability() -> None:
    entry = baseline_of(81, 87, 92).results["s"]["a"]
    assert entry.axis_score == 87 and entry.runs == 3
    assert entry.run_scores == [81, 87, 92]
    assert entry.stdev == 5.51
    assert entry.reliability == Reliability(succeeded=3, total=3)
    assert entry.noise_measured


def test_drop_inside_two_sigma_is_unchanged() -> None:
    # σ 5 → band 10; representative 85 → 78 is a drop of 7.
    result, e = compare_runs((80, 85, 90), (76, 78, 79))
    assert e.band == 10 and e.delta == -7 and e.verdict == "unchanged" and not e.regressed
    assert not result.has_regression


def test_drop_outside_two_sigma_is_a_regression() -> None:
    result, e = compare_runs((80, 85, 90), (70, 72, 74))
    assert e.delta == -13 and e.verdict == "regressed" and e.regressed and e.score_regressed
    assert result.summary.regressed == 1 and result.has_regression
    text = render_comparison(result)
    assert (
        "REGRESSION s × a: 85 → 72 (-13), beyond the noise band ±10 (2σ, σ 5 over 3 runs)" in text
    )


def test_rise_beyond_the_band_is_improved() -> None:
    _, e = compare_runs((80, 85, 90), (94, 96, 98))
    assert e.verdict == "improved" and not e.regressed


def test_floor_of_one_when_sigma_is_tiny() -> None:
    assert noise_band(0.2) == 1 and noise_band(None) == 1 and noise_band(3) == 6
    _, e = compare_runs((85, 85, 85), (84, 84, 84))
    assert e.band == 1 and e.stdev == 0 and e.verdict == "unchanged"
    _, e = compare_runs((85, 85, 85), (83, 83, 83))
    assert e.verdict == "regressed"


def test_single_run_baseline_uses_the_floor_and_says_noise_is_unmeasured() -> None:
    result, e = compare_runs((85,), (83,))
    assert not e.noise_measured and e.band == 1 and e.stdev is None
    assert e.verdict == "regressed"
    text = render_comparison(result)
    assert "noise unmeasured" in text
    assert "±1 (floor; noise unmeasured: single-run baseline)" in text


def test_per_dimension_deltas_are_recorded() -> None:
    base = baseline_of(80)
    now = pair("s", "a", 82)
    now.runs[0] = baseline_run(1, 82, 1)
    now.runs[0].score = score(82, goal_achievement=70, service=90)
    from axis_eval.runs.aggregate import refresh_pair

    refresh_pair(now)
    e = compare(base, report("r2", now)).entries[0]
    assert e.categories["goalAchievement"].delta == -10
    assert e.categories["service"].delta == 10
    assert e.categories["environment"].delta == 2
    assert e.verdict == "improved"


@pytest.mark.parametrize(
    ("base", "now", "regressed"),
    [
        (Reliability(succeeded=3, total=3), Reliability(succeeded=2, total=3), True),
        (Reliability(succeeded=3, total=3), Reliability(succeeded=3, total=3), False),
        (Reliability(succeeded=2, total=3), Reliability(succeeded=2, total=3), False),
        (Reliability(succeeded=2, total=3), Reliability(succeeded=3, total=5), False),
        (Reliability(succeeded=3, total=3), Reliability(succeeded=4, total=5), True),
        (Reliability(succeeded=1, total=1), Reliability(succeeded=0, total=1), True),
        (Reliability(succeeded=1, total=1), Reliability(succeeded=2, total=3), True),
        (Reliability(succeeded=3, total=5), Reliability(succeeded=1, total=3), False),
        (Reliability(succeeded=3, total=5), Reliability(succeeded=0, total=1), False),
        (Reliability(succeeded=3, total=3), Reliability(succeeded=0, total=0), False),
    ],
)
def test_reliability_rule(base: Reliability, now: Reliability, regressed: bool) -> None:
    assert reliability_delta(base, now).regressed is regressed


def test_lower_reliability_is_a_regression_on_its_own() -> None:
    result, e = compare_runs((85, 85, 85), (85, "fail", 85))
    assert e.verdict == "unchanged" and e.reliability.regressed and e.regressed
    assert result.summary.reliability_regressions == 1 and result.summary.regressed == 1
    assert "reliability 3/3 → 2/3" in render_comparison(result)


def test_a_pair_that_no_longer_scores_regresses_on_reliability() -> None:
    _, e = compare_runs((85, 85, 85), ("fail", "fail", "fail"))
    assert e.verdict == "unscored" and e.current is None and e.regressed


def test_withheld_runs_do_not_count_against_reliability() -> None:
    _, e = compare_runs((85, 85, 85), (85, "withheld", 85))
    assert e.reliability.current == Reliability(succeeded=2, total=2, withheld=1)
    assert not e.regressed


def test_new_and_vanished_pairs_are_listed() -> None:
    base = baseline_of(80)
    now = report("r2", pair("t", "a", 70), pair("t", "b", "fail"))
    result = compare(base, now)
    assert result.entries == []
    assert [(r.scenario_key, r.agent_name) for r in result.new] == [("t", "a")]
    assert [(r.scenario_key, r.agent_name) for r in result.vanished] == [("s", "a")]
    assert result.summary.new_scenarios == 1 and result.summary.vanished_pairs == 1
    text = render_comparison(result)
    assert "New (not in baseline): 1" in text and "  + t × a (70)" in text
    assert "  - s × a (was 80)" in text
    assert not result.has_regression


def test_axis_format_file_reads_as_a_single_run_baseline(tmp_path: Path) -> None:
    folder = tmp_path / ".axis" / "baselines"
    folder.mkdir(parents=True)
    axis_file = {
        "name": "default",
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
        "results": {
            "s": {
                "a": {
                    "axisScore": 85,
                    "goalAchievement": 90,
                    "environment": 80,
                    "service": 80,
                    "agent": 85,
                    "durationMs": 12000,
                    "tokens": 3456,
                    "fromReportId": "2026-01-01-000000",
                    "timestamp": "2026-01-01T00:10:00.000Z",
                }
            }
        },
    }
    (folder / "default.json").write_text(json.dumps(axis_file, indent=2))
    base = load_baseline(tmp_path)
    entry = base.results["s"]["a"]
    assert entry.run_count == 1 and entry.scores == [85] and not entry.noise_measured
    result = compare(base, report("r2", pair("s", "a", 83, 83, 84)))
    e = result.entries[0]
    assert e.band == 1 and not e.noise_measured and e.verdict == "regressed"
    assert e.p_value is None and e.p_value_method == "insufficient n"
    assert e.categories["goalAchievement"].delta == -7
    # set merges into an AXIS file and keeps its entries readable by AXIS (same keys).
    set_baseline(tmp_path, report("r3", pair("t", "a", 70)))
    raw = json.loads((folder / "default.json").read_text())
    assert raw["results"]["s"]["a"]["axisScore"] == 85
    assert raw["createdAt"] == "2026-01-01T00:00:00.000Z"
    assert {"axisScore", "runs", "runScores", "stdev", "reliability"} <= set(
        raw["results"]["t"]["a"]
    )


def test_mann_whitney_shown_with_four_runs_each_side() -> None:
    _, e = compare_runs((80, 81, 82, 83, 84), (70, 71, 72, 73, 74))
    assert e.p_value_method == "exact" and e.p_value == pytest.approx(2 / 252)
    _, e = compare_runs((80, 81, 82), (70, 71, 72, 73, 74))
    assert e.p_value is None and e.p_value_method == "insufficient n"
