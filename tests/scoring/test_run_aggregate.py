"""runs/aggregate with typed scores: composites, representatives, withheld runs."""

from __future__ import annotations

from axis_eval.report.models import RunEntry
from axis_eval.runs.aggregate import composite, reliability, representative
from axis_eval.scoring.models import ScoreResult


def scored(index: int, value: int | None, status: str = "completed") -> RunEntry:
    if value is None:
        score = ScoreResult(withheld=True, withheld_reason="judge failed")
    else:
        score = ScoreResult(
            axis_score=value, goal_achievement=value, environment=value, service=value, agent=value
        )
    return RunEntry(
        run_index=index,
        status=status,
        failed=status == "failed",
        dir=f"run-{index}",
        score=score,
    )


def test_composite_reads_the_typed_score() -> None:
    assert composite(scored(1, 73)) == 73.0
    assert composite(scored(1, None)) is None
    assert composite(scored(1, 73, status="failed")) is None
    assert composite(RunEntry(run_index=1, status="completed", failed=False, dir="d")) is None


def test_withheld_runs_are_no_candidates() -> None:
    # scores 90 and 60 and one withheld: median of (60, 90) = 75; |90-75| = |60-75| → lower index
    runs = [scored(1, None), scored(2, 90), scored(3, 60)]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 2
    # everything withheld: the lowest-index completed run stands in
    rep = representative([scored(2, None), scored(1, None)])
    assert rep is not None and rep.run_index == 1


def test_reliability_leaves_withheld_runs_out() -> None:
    runs = [scored(1, 80), scored(2, None), scored(3, 50, status="failed")]
    r = reliability(runs)
    # finished 3, withheld 1 → total 2; succeeded: 2 completed − 1 withheld = 1
    assert (r.succeeded, r.total, r.withheld) == (1, 2, 1)
