"""Live activities: what may still own a process that carries no job marker.

A process that clears its environment (``env -i``) and leaves its agent's session carries
nothing that names its job; re-parented to this subreaper, it is an *adopted orphan*
(:mod:`.orphans`). What is left to attribute it is its birth: it descends from one of our
spawns, so it was born while that spawn's activity was live. An activity is a job marker
from its first spawn (:func:`~.markers.count_spawn`) until :func:`~.kill.kill_marked` has
found it clean (or :func:`~.markers.forget_marker`), or one spawn in flight (a child not yet
registered in :mod:`.children`). An orphan born before every live activity began can belong
to none of them: its owner is over, and it may be killed. One born later may belong to a
running job, so it is spared until the activities live at its birth have all ended.

Times are kernel clock ticks since boot, the unit of ``/proc/<pid>/stat``'s start time
(field 22, on ``CLOCK_BOOTTIME``), so no clock is compared with another. Stdlib only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection

__all__ = ["begin", "end", "live", "now_ticks", "oldest"]

_HZ = os.sysconf("SC_CLK_TCK")
_live: dict[object, int] = {}
"""Activity key (a job marker, or a token per spawn in flight) → the tick it began at."""


def now_ticks() -> int:
    """Now, in the clock ticks of ``/proc/<pid>/stat``'s start time (truncated, as there)."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) * _HZ // 1_000_000_000


def begin(key: object) -> None:
    """``key`` is live from now on (an activity already live keeps its earlier start)."""
    if key not in _live:
        # One tick early: a child forked within this tick must count as born after it.
        _live[key] = now_ticks() - 1


def end(key: object) -> None:
    """``key`` is over: nothing it started is running any more (or it never started)."""
    _live.pop(key, None)


def live() -> Collection[object]:
    """The live activities' keys: a live, read-only view."""
    return _live.keys()


def oldest() -> int | None:
    """The start tick of the oldest live activity; None when none is live."""
    return min(_live.values(), default=None)
