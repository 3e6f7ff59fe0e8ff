"""From runs to a pair: representative run, status, reliability, summary."""

from __future__ import annotations

from axis_eval.runs.aggregate import (
    composite,
    describe_reliability,
    pair_status,
    reliability,
    representative,
    summarize,
)
from helpers.factories import pair, run_entry


def test_composite_only_for_completed_unwithheld_runs() -> None:
    assert composite(run_entry(1, 80)) == 80.0
    assert composite(run_entry(1, 80, status="failed")) is None
    assert composite(run_entry(1, "withheld")) is None
    assert composite(run_entry(1)) is None


def test_representative_is_nearest_the_median() -> None:
    runs = [run_entry(1, 81), run_entry(2, 92), run_entry(3, 87)]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 3


def test_representative_ties_go_to_the_lowest_index() -> None:
    runs = [
        run_entry(1, 90),
        run_entry(2, 70),
        run_entry(3, 70),
        run_entry(4, 90),
        run_entry(5, 80),
    ]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 5
    rep = representative([run_entry(2, 70), run_entry(1, 90)])
    assert rep is not None and rep.run_index == 1


def test_failed_runs_are_never_representative() -> None:
    runs = [run_entry(1, 0, status="failed"), run_entry(2, 60), run_entry(3, status="failed")]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 2


def test_unscored_representative_is_the_first_completed() -> None:
    rep = representative([run_entry(1, status="failed"), run_entry(2), run_entry(3)])
    assert rep is not None and rep.run_index == 2
    assert representative([run_entry(1, status="failed")]) is None


def test_pair_status() -> None:
    assert pair_status([run_entry(1, status="failed"), run_entry(2)]) == "completed"
    assert pair_status([run_entry(1, status="failed"), run_entry(2, status="failed")]) == "failed"
    assert (
        pair_status([run_entry(1, status="failed"), run_entry(2, status="cancelled")])
        == "cancelled"
    )


def test_reliability_leaves_withheld_and_cancelled_out() -> None:
    r = reliability(
        [
            run_entry(1, 80),
            run_entry(2, "withheld"),
            run_entry(3, status="failed"),
            run_entry(4, status="cancelled"),
        ]
    )
    assert (r.succeeded, r.total, r.withheld) == (1, 2, 1)


def test_infrastructure_failures_leave_the_denominator_and_are_counted_apart() -> None:
    """A sandbox or worker that could not run a job is not the agent's failure."""
    r = reliability(
        [
            run_entry(1, 80),
            run_entry(2, status="failed", error_kind="infrastructure"),
            run_entry(3, status="failed", error_kind="agent"),
        ]
    )
    assert (r.succeeded, r.total, r.withheld, r.infrastructure) == (1, 2, 0, 1)
    assert describe_reliability(r) == "1/2 scored (1 infrastructure)"


def test_refresh_pair_uses_the_representative() -> None:
    entry = pair(
        run_entry(1, 50, duration_ms=5),
        run_entry(2, 70, duration_ms=7),
        run_entry(3, status="failed", error="boom", duration_ms=9),
    )
    assert entry.status == "completed" and entry.failed is False
    assert entry.representative_run_index == 1, "a tie at the median goes to the lowest index"
    assert entry.duration_ms == 5
    assert entry.error is None


def test_refresh_failed_pair_shows_the_error() -> None:
    entry = pair(
        run_entry(1, status="failed", error="first"), run_entry(2, status="failed", error="last")
    )
    assert entry.status == "failed" and entry.failed is True
    assert entry.representative_run_index is None
    assert entry.error == "last"


def test_summary_counts_pairs_and_runs() -> None:
    good = pair(run_entry(1, 80), run_entry(2, status="failed"), run_entry(3, 60))
    bad = pair(run_entry(1, status="failed"))
    pending = pair(run_entry(1, status="cancelled"))
    s = summarize([good, bad, pending], skipped=2, load_failures=1)
    assert (s.total, s.completed, s.failed, s.cancelled, s.skipped) == (3, 1, 1, 1, 2)
    assert (s.runs_total, s.runs_completed, s.runs_failed, s.runs_cancelled) == (5, 2, 2, 1)
    assert s.load_failures == 1
    assert s.average_axis_score == 80, "one representative per pair (a tie goes to run 1)"
