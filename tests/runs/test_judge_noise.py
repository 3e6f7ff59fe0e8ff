"""The judge-spread math (``runs.judge_noise``), baselines with and without it, and reports
written before re-judging existed."""

from __future__ import annotations

import json
import math

from axis_eval.report.models import PairEntry, ReportManifest
from axis_eval.report.render import render_report_detail
from axis_eval.report.render_stats import interval_lines, judge_noise_lines
from axis_eval.runs.baseline_models import Baseline, BaselineEntry
from axis_eval.runs.baselines import _compare_pair, entry_from_pair
from axis_eval.runs.judge_noise import combined_band, judge_noise, judge_share, pooled_stdev
from axis_eval.scoring.models import ScoreResult
from helpers.factories import score, withheld


def test_pooled_stdev_weights_runs_by_their_degrees_of_freedom() -> None:
    # [70, 80, 90]: variance 100 (2 df); [60, 64]: variance 8 (1 df); [50] adds nothing.
    assert pooled_stdev([[70, 80, 90], [60, 64], [50]]) == math.sqrt((2 * 100 + 8) / 3)
    assert pooled_stdev([[50], [60]]) is None
    assert pooled_stdev([[7, 7, 7]]) == 0


def test_the_share_is_capped_and_its_edges_are_none_or_one() -> None:
    assert judge_share(3.0, 6.0) == 0.25
    assert judge_share(5.0, 4.0) == 1.0, "sampling noise above 100 % is capped"
    assert judge_share(2.0, 0.0) == 1.0
    assert judge_share(0.0, 0.0) is None
    assert judge_share(2.0, None) is None and judge_share(None, 2.0) is None


def test_combined_band() -> None:
    assert combined_band(None, None) == 1.0
    assert combined_band(3.0, None) == 6.0, "without re-judging: max(1, 2σ) as before"
    assert combined_band(None, 0.2) == 1.0
    assert combined_band(3.0, 4.0) == 10.0  # 2·sqrt(9 + 16)


def test_judge_noise_by_hand_with_a_withheld_rejudgment() -> None:
    stored: dict[int, ScoreResult | None] = {1: score(80), 2: score(60), 3: None}
    rejudged = {1: [score(84), score(82)], 2: [score(60), withheld()], 3: [score(10)]}
    noise = judge_noise(stored, rejudged, rejudge=2, judge="anthropic:m")
    assert noise is not None and noise.runs == 2, "run 3 has no stored score"
    assert [g.grades["axisScore"] for g in noise.grades] == [[80, 84, 82], [60, 60]]
    assert any("run #2: 1 of 2 re-judgments withheld" in n for n in noise.notes)
    head = noise.scores["axisScore"]
    # run 1: variance 4 (2 df); run 2: variance 0 (1 df) → pooled 8/3; stored 80, 60: 200.
    assert head.judge_stdev == round(math.sqrt(8 / 3), 2)
    assert head.runs_stdev == round(math.sqrt(200), 2)
    assert head.judge_share == round((8 / 3) / 200, 4)
    assert judge_noise(stored, {}, rejudge=2) is None


def _pair(**fields: object) -> PairEntry:
    base = {
        "scenarioKey": "s",
        "baseKey": "s",
        "scenarioName": "S",
        "agentName": "a",
        "agent": "codex",
        "status": "completed",
        "failed": False,
        "runCount": 1,
        "dir": "s/a",
        "prompt": "p",
        "judge": "done",
        "agentConfig": {},
        "resolvedConfig": {},
    }
    return PairEntry.model_validate({**base, **fields})


def test_a_pair_written_before_rejudging_reads_and_shows_nothing_new() -> None:
    pair = _pair()
    assert pair.judge_noise is None and judge_noise_lines(pair) == []
    assert "judgeNoise" not in json.loads(pair.model_dump_json(by_alias=True, exclude_none=True))
    assert interval_lines(pair) == []


def test_an_old_report_file_still_reads() -> None:
    """A report.json as written before re-judging (no judgeNoise, no intervals) reads, and
    renders without judge lines."""
    run = {"runIndex": 1, "status": "completed", "failed": False, "dir": "s/a/run-1",
           "score": score(70).model_dump(by_alias=True, exclude_none=True)}  # fmt: skip
    pair = _pair(runs=[run]).model_dump(by_alias=True, exclude_none=True)
    for key in ("judgeNoise", "intervals", "loadWarning", "adaptive"):
        pair.pop(key, None)
    old = {
        "schemaVersion": 1,
        "tool": {"name": "axis-eval", "version": "0.1.0"},
        "reportId": "old",
        "state": "finished",
        "startedAt": "2026-01-01T00:00:00Z",
        "timestamp": "2026-01-01T00:00:00Z",
        "configPath": "x",
        "configDir": "x",
        "summary": {"total": 1},
        "results": [pair],
    }
    manifest = ReportManifest.model_validate_json(json.dumps(old))
    assert manifest.results[0].judge_noise is None
    assert "re-judged" not in render_report_detail(manifest)


def test_a_baseline_keeps_the_judge_spread_and_widens_the_band() -> None:
    stored = {1: score(80), 2: score(84), 3: score(76)}
    rejudged = {1: [score(86)], 2: [score(84)], 3: [score(70)]}
    noise = judge_noise(stored, rejudged, rejudge=1)
    assert noise is not None
    runs = [{"runIndex": i, "status": "completed", "failed": False, "dir": f"r{i}",
             "score": s.model_dump(by_alias=True)} for i, s in stored.items()]  # fmt: skip
    pair = _pair(runs=runs, runCount=3, score=score(80).model_dump(by_alias=True))
    pair.judge_noise = noise
    report = ReportManifest.model_validate(
        {
            "tool": {"version": "t"},
            "reportId": "r",
            "startedAt": "2026-01-01T00:00:00Z",
            "timestamp": "2026-01-01T00:00:00Z",
            "configPath": "x",
            "configDir": "x",
            "summary": {},
            "results": [pair.model_dump(by_alias=True)],
        }
    )
    entry = entry_from_pair(report.results[0], report)
    assert entry is not None and entry.stdev == 4.0 and entry.rejudged == 1
    # Each run: two grades, variance (d/2)²·2 = d²/2 for d = 6, 0, 6 → pooled (18 + 0 + 18)/3.
    assert entry.judge_stdev == round(math.sqrt(12), 2)
    current = _pair(runs=runs[:1], score=score(70).model_dump(by_alias=True))
    cmp = _compare_pair(entry, current)
    assert cmp.band == round(2 * math.sqrt(4.0**2 + entry.judge_stdev**2), 2) == 10.58
    assert cmp.verdict == "unchanged", "-10 is inside the band of both spreads"
    # The same baseline entry without the judge's spread (or an AXIS file): band 2σ = 8.
    plain = BaselineEntry.model_validate(
        {**entry.model_dump(by_alias=True), "judgeStdev": None, "rejudged": None}
    )
    assert _compare_pair(plain, current).band == 8 and _compare_pair(plain, current).regressed
    axis_file = {"axisScore": 80, "goalAchievement": 80, "environment": 80, "service": 80,
                 "agent": 80, "fromReportId": "r", "timestamp": "t"}  # fmt: skip
    old = Baseline.model_validate(
        {"name": "d", "createdAt": "t", "updatedAt": "t", "results": {"s": {"a": axis_file}}}
    )
    assert old.results["s"]["a"].judge_stdev is None
    assert _compare_pair(old.results["s"]["a"], current).band == 1
