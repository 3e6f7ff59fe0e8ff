"""`axis reports ID` with scores: AXIS/Goal/Env/Svc/Agent columns and ↳ insight lines."""

from __future__ import annotations

from axis_eval.report.models import PairEntry, ReportManifest, RunEntry, Summary, ToolInfo
from axis_eval.report.render import render_report_detail
from axis_eval.scoring.models import ScoreResult


def pair(key: str, score: ScoreResult | None, error: str | None = None) -> PairEntry:
    return PairEntry(
        scenario_key=key,
        base_key=key,
        scenario_name=key,
        agent_name="codex",
        agent="codex",
        status="completed",
        failed=False,
        run_count=1,
        dir="d",
        prompt="p",
        judge="j",
        agent_config={},
        resolved_config={},
        error=error,
        score=score,
        runs=[RunEntry(run_index=1, status="completed", failed=False, dir="d", score=score)],
    )


def manifest(*pairs: PairEntry) -> ReportManifest:
    return ReportManifest(
        tool=ToolInfo(version="1"),
        report_id="r1",
        started_at="2026-01-01T00:00:00Z",
        timestamp="2026-01-01T00:01:00Z",
        config_path="/p/c.json",
        config_dir="/p",
        summary=Summary(total=len(pairs), completed=len(pairs), average_axis_score=77),
        results=list(pairs),
    )


def score(axis: int, goal: int, env: int, svc: int, agent: int, insights: list[str]) -> ScoreResult:
    return ScoreResult(
        axis_score=axis,
        goal_achievement=goal,
        environment=env,
        service=svc,
        agent=agent,
        insights=insights,
    )


def test_scores_and_insights() -> None:
    weak = score(66, 70, 62, 67, 61, ["Env: success 65 (#2)", "Agent: weight 50 (#3)"])
    held = ScoreResult(withheld=True, withheld_reason="judge answered garbage twice")
    text = render_report_detail(
        manifest(
            pair("good", score(92, 100, 90, 85, 88, [])),
            pair("weak", weak),
            pair("held", held),
            pair("unscored", None),
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
    good = lines.index(next(line for line in lines if line.startswith("good")))
    assert not lines[good + 1].startswith("    ↳")
    assert "AXIS Result: 77 / 100 (average)" in text


def test_no_score_columns_without_scores() -> None:
    text = render_report_detail(manifest(pair("a", None)))
    assert "Goal" not in text and "Env" not in text
