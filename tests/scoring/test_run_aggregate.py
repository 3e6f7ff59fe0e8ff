"""runs/aggregate with typed scores: composites, representatives, withheld runs."""

from __future__ import annotations

from axis_eval.runs.aggregate import composite, reliability, representative
from helpers.factories import run_entry


def test_composite_reads_the_typed_score() -> None:
    assert composite(run_entry(1, 73)) == 73.0
    assert composite(run_entry(1, "withheld")) is None
    assert composite(run_entry(1, 73, status="failed")) is None
    assert composite(run_entry(1)) is None, "an unjudged run"


def test_withheld_runs_are_no_candidates() -> None:
    # scores 90 and 60 and one withheld: median of (60, 90) = 75; |90-75| = |60-75| → lower index
    runs = [run_entry(1, "withheld"), run_entry(2, 90), run_entry(3, 60)]
    rep = representative(runs)
    assert rep is not None and rep.run_index == 2
    # everything withheld: the lowest-index completed run stands in
    rep = representative([run_entry(2, "withheld"), run_entry(1, "withheld")])
    assert rep is not None and rep.run_index == 1


def test_reliability_leaves_withheld_runs_out() -> None:
    runs = [run_entry(1, 80), run_entry(2, "withheld"), run_entry(3, 50, status="failed")]
    r = reliability(runs)
    # finished 3, withheld 1 → total 2; succeeded: 2 completed − 1 withheld = 1
    assert (r.succeeded, r.total, r.withheld) == (1, 2, 1)
