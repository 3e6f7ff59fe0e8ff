"""Where a Dask run's jobs go (`distributed.placement.Placement`): queued behind each slot
only when the cluster's slots bound what runs, late workers admitted within the cap."""

from __future__ import annotations

from axis_eval.distributed.placement import QUEUED, Placement


def test_jobs_queue_behind_each_slot_when_the_slots_bound_the_run() -> None:
    placement = Placement(concurrency=20)
    placement.start({"a": 10, "b": 10, "idle": 0})
    assert placement.slots == {"a": 10, "b": 10}  # no slot resource: no jobs
    assert placement.depth == QUEUED and placement.capacity == 40
    where = [placement.place() for _ in range(40)]
    assert where.count("a") == 20 and where.count("b") == 20
    assert where[:4] == ["a", "b", "a", "b"]  # the most room first, alternating
    assert placement.place() is None  # full: Dask would decide
    placement.release("b")
    assert placement.place() == "b"


def test_nothing_is_queued_when_only_axis_run_can_hold_the_cap() -> None:
    placement = Placement(concurrency=5)
    placement.start({"a": 10, "b": 10})
    assert placement.depth == 1 and placement.capacity == 5


def test_lost_workers_leave_and_new_ones_wait_for_their_check() -> None:
    placement = Placement(concurrency=30)
    placement.start({"a": 10, "b": 10})
    assert placement.refresh({"a": 10, "c": 10, "d": 0}) == ["c"]  # b lost; d has no slot
    assert placement.slots == {"a": 10}  # c is not used before its check
    assert placement.refresh({"a": 10, "c": 10}) == []  # asked once
    assert placement.admit("c", 10)
    assert placement.slots == {"a": 10, "c": 10}


def test_a_late_worker_is_refused_when_queued_jobs_would_break_the_cap() -> None:
    placement = Placement(concurrency=20)
    placement.start({"a": 10, "b": 10})
    assert placement.refresh({"a": 10, "b": 10, "c": 4}) == ["c"]
    assert not placement.admit("c", 4)  # 24 slots with 40 jobs out could run 24 > 20
    assert "c" not in placement.slots
    relaxed = Placement(concurrency=8)
    relaxed.start({"a": 10})
    assert relaxed.depth == 1 and relaxed.admit("c", 4)  # the cap is held by axis run
