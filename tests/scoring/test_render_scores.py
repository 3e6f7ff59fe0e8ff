"""`axis reports ID` with scores: AXIS/Goal/Env/Svc/Agent columns and ↳ insight lines."""

from __future__ import annotations

from axis_eval.report.models import PairEntry, Summary
from axis_eval.report.render import render_report_detail
from axis_eval.scoring.models import ScoreResult
from helpers.factories import manifest, pair, run_entry, score, withheld


def scored_pair(key: str, result: ScoreResult | None) -> PairEntry:
    """A one-run pair shown as recorded (not refreshed, so a withheld score stays the headline)."""
    return pair(run_entry(1, score=result), scenario=key, refresh=False, score=result)


def test_scores_and_insights() -> None:
    weak = score(
        66,
        goal_achievement=70,
        environment=62,
        service=67,
        agent=61,
        insights=["Env: success 65 (#2)", "Agent: weight 50 (#3)"],
    )
    good = score(92, goal_achievement=100, environment=90, service=85, agent=88)
    held = withheld("judge answered garbage twice")
    text = render_report_detail(
        manifest(
            scored_pair("good", good),
            scored_pair("weak", weak),
            scored_pair("held", held),
            scored_pair("unscored", None),
            report_id="r1",
            summary=Summary(total=4, completed=4, average_axis_score=77),
        )
    )
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("Scenario"))
    assert header.split()[4:9] == ["AXIS", "Goal", "Env", "Svc", "Agent"]
    row = next(line for line in lines if line.startswith("weak"))
    assert row.split()[5:10] == ["66", "70", "62", "67", "61"]
    assert "    ↳ Env: success 65 (#2)  |  Agent: weight 50 (#3)" in lines
    at = lines.index(next(line for line in lines if line.startswith("held")))
    assert "withheld" in lines[at]
    assert lines[at + 1] == "    ↳ score withheld: judge answered garbage twice"
    unscored = next(line for line in lines if line.startswith("unscored"))
    assert unscored.split()[5:10] == ["-"] * 5
    at = lines.index(next(line for line in lines if line.startswith("good")))
    assert not lines[at + 1].startswith("    ↳")
    assert "AXIS Result: 77 / 100 (average)" in text


def test_no_score_columns_without_scores() -> None:
    text = render_report_detail(manifest(scored_pair("a", None)))
    assert "Goal" not in text and "Env" not in text
