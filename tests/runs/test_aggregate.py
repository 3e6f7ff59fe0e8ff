"""From runs to a pair: representative run, status, reliability, summary."""

from __future__ import annotations

from typing import Any

from axis_eval.report.models import PairEntry, RunEntry
from axis_eval.runs.aggregate import (
    composite,
    pair_status,
    refresh_pair,
    reliability,
    representative,
    summarize,
)
from axis_eval.scoring.models import ScoreResult


def run(index: int, status: str = "completed", score: float | None = None, **kw: Any) -> RunEntry:
    return RunEntry(
        run_index=index,
        status=status,  # type: ignore[arg-type]
        failed=status == "failed",
        dir=f"run-{index}",
        score=None if score is None else _score(int(score), **kw.pop("extra", {})),
        **kw,
    )


def _score(value: int, withheld: bool = False) -> ScoreResult:
    if withheld:
        return ScoreResult(withheld=True, withheld_reason="judge failed")
    return ScoreResult(
        axis_score=value, goal_achievement=value, environment=value, service=value, agent=value
    )


def pair(*runs: RunEntry) -> PairEntry:
    entry = PairEntry(
        scenario_key="k",
        base_key="k",
        scenario_name="K",
        agent_name="codex",
        agent="codex",
        status="cancelled",
        failed=False,
        run_count=len(runs),
        dir="scenarios/k/codex",
        prompt="p",
        judge="j",
        agent_config={},
        resolved_config={},
        runs=list(runs),
    )
    refresh_pair(entry)
    return entry


def test_composite_only_for_completed_unwithheld_runs() -> None:
    assert composite(run(1, score=80)) == 80.0
    assert composite(run(1, status="failed", score=80)) is None
    assert composite(run(1, score=80, extra={"withheld": True})) is None
    assert composite(run(1)) is None


def test_representative_is_nearest_the_median() -> None:
    runs = [run(1, score=81), run(2, score=92), run(3, score=87)]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 3


def test_representative_ties_go_to_the_lowest_index() -> None:
    runs = [
        run(1, score=90),
        run(2, score=70),
        run(3, score=70),
        run(4, score=90),
        run(5, score=80),
    ]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 5
    rep = representative([run(2, score=70), run(1, score=90)])
    assert rep is not None and rep.run_index == 1


def test_failed_runs_are_never_representative() -> None:
    runs = [run(1, status="failed", score=0), run(2, score=60), run(3, status="failed")]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 2


def test_unscored_representative_is_the_first_completed() -> None:
    rep = representative([run(1, status="failed"), run(2), run(3)])
    assert rep is not None and rep.run_index == 2
    assert representative([run(1, status="failed")]) is None


def test_pair_status() -> None:
    assert pair_status([run(1, status="failed"), run(2)]) == "completed"
    assert pair_status([run(1, status="failed"), run(2, status="failed")]) == "failed"
    assert pair_status([run(1, status="failed"), run(2, status="cancelled")]) == "cancelled"


def test_reliability_leaves_withheld_and_cancelled_out() -> None:
    r = reliability(
        [
            run(1, score=80),
            run(2, score=0, extra={"withheld": True}),
            run(3, status="failed"),
            run(4, status="cancelled"),
        ]
    )
    assert (r.succeeded, r.total, r.withheld) == (1, 2, 1)


def test_refresh_pair_uses_the_representative() -> None:
    entry = pair(
        run(1, score=50, duration_ms=5),
        run(2, score=70, duration_ms=7),
        run(3, status="failed", error="boom", duration_ms=9),
    )
    assert entry.status == "completed" and entry.failed is False
    assert entry.representative_run_index == 1, "a tie at the median goes to the lowest index"
    assert entry.duration_ms == 5
    assert entry.error is None


def test_refresh_failed_pair_shows_the_error() -> None:
    entry = pair(run(1, status="failed", error="first"), run(2, status="failed", error="last"))
    assert entry.status == "failed" and entry.failed is True
    assert entry.representative_run_index is None
    assert entry.error == "last"


def test_summary_counts_pairs_and_runs() -> None:
    good = pair(run(1, score=80), run(2, status="failed"), run(3, score=60))
    bad = pair(run(1, status="failed"))
    pending = pair(run(1, status="cancelled"))
    s = summarize([good, bad, pending], skipped=2, load_failures=1)
    assert (s.total, s.completed, s.failed, s.cancelled, s.skipped) == (3, 1, 1, 1, 2)
    assert (s.runs_total, s.runs_completed, s.runs_failed, s.runs_cancelled) == (5, 2, 2, 1)
    assert s.load_failures == 1
    assert s.average_axis_score == 80, "one representative per pair (a tie goes to run 1)"
