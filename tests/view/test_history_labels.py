"""The history chart's x-axis labels: distinct, few enough not to overlap, ends kept."""

from __future__ import annotations

from hypothesis import given, strategies as st

from axis_eval.view.history import MAX_X_LABELS, x_labels


def _at(day: int, hour: int = 8, minute: int = 0, second: int = 0) -> str:
    return f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.000Z"


def test_days_alone_when_each_point_has_its_own_day() -> None:
    assert x_labels([_at(1), _at(2), _at(5)]) == {0: "11-01", 1: "11-02", 2: "11-05"}


def test_the_time_is_added_when_a_day_repeats() -> None:
    assert x_labels([_at(1, 8), _at(1, 14), _at(2, 8)]) == {
        0: "11-01 08:00",
        1: "11-01 14:00",
        2: "11-02 08:00",
    }
    assert x_labels([_at(1, 8, 0, 1), _at(1, 8, 0, 2)]) == {
        0: "11-01 08:00:01",
        1: "11-01 08:00:02",
    }


def test_many_points_are_thinned_keeping_both_ends() -> None:
    got = x_labels([_at(d) for d in range(1, 31)])
    assert 0 in got and 29 in got and len(got) <= MAX_X_LABELS[10]
    assert got[29] == "11-30"


@given(st.lists(st.integers(0, 10**6), unique=True, max_size=300))
def test_labels_are_distinct_bounded_and_ordered(offsets: list[int]) -> None:
    stamps = sorted(
        _at(1 + o // 86_400 % 28, o // 3600 % 24, o // 60 % 60, o % 60) for o in offsets
    )
    stamps = sorted(set(stamps))
    got = x_labels(stamps)
    if not stamps:
        assert got == {}
        return
    assert min(got) == 0 and max(got) == len(stamps) - 1
    assert len(set(got.values())) == len(got)
    width = {5: 10, 11: 16, 14: 19}[len(got[0])]  # MM-DD, MM-DD HH:MM, MM-DD HH:MM:SS
    assert {len(t) for t in got.values()} == {len(got[0])}
    most = MAX_X_LABELS[width]
    assert len(got) == len(stamps) if len(stamps) <= most else len(got) <= most
