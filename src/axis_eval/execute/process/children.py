"""The one registry of this process's children whose exit status someone awaits.

Every spawner in the process registers here: :func:`~.spawning.spawn` and the sentinel do, and
so does an embedded task runner (its task command, helpers and guest processes). The orphan
reaper (:func:`~.reaping.reap_orphans`) reaps by pid and leaves every pid registered here to
its owner, so a command's exit code is never stolen; while a spawn is in flight (its pid not
registered yet) it reaps nothing at all.

The registry also remembers the job marker each child was spawned with: a marker scan need
not read the environment of our children spawned with another marker (:func:`others`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator

from axis_eval.execute.process import activity

__all__ = [
    "has_marker",
    "in_flight",
    "in_flight_since",
    "is_owned",
    "others",
    "own",
    "owned",
    "release",
    "spawning",
]

_owned: dict[int, str | None] = {}
"""Pid → the job marker it was spawned with (None: no marker known, e.g. the sentinel or a
task runner's command). An owned pid is an unreaped child, so it cannot have been reused."""
_in_flight = 0
_flight: dict[object, int] = {}
"""Each spawn in flight → the tick it began at."""


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Wrap a spawn and the :func:`own` of its pid: no orphan is reaped meanwhile (the new
    child may exit before its pid is registered, and its status is not the reaper's), and
    nothing born meanwhile is taken for an adopted orphan (the spawn is a live activity:
    the new child is not registered yet)."""
    global _in_flight
    _in_flight += 1
    token = object()
    activity.begin(token)
    _flight[token] = activity.now_ticks() - 1  # one tick early, as activities begin
    try:
        yield
    finally:
        _in_flight -= 1
        _flight.pop(token, None)
        activity.end(token)


def in_flight() -> int:
    """How many spawns are between their start and the :func:`own` of their pid."""
    return _in_flight


def in_flight_since() -> int | None:
    """The start tick of the oldest spawn in flight (None: none is). A child born before it
    cannot be that spawn's: its exit status may be taken (a zombie orphan reaped) even
    while spawns are in flight, which with many jobs at once is nearly always."""
    return min(_flight.values(), default=None)


def own(pid: int, marker: str | None = None) -> None:
    """Register ``pid`` as a child whose exit status its spawner collects."""
    _owned[pid] = marker


def release(pid: int) -> None:
    """``pid`` has been reaped by its owner (or never started): forget it."""
    _owned.pop(pid, None)


def is_owned(pid: int) -> bool:
    """Whether ``pid`` is a registered child (the orphan reaper leaves it alone)."""
    return pid in _owned


def owned() -> Collection[int]:
    """The registered pids: a live, read-only view (no copy on every reaper pass)."""
    return _owned.keys()


def has_marker(marker: str) -> bool:
    """Whether a registered child was spawned with ``marker`` (a scan of the registry)."""
    return marker in _owned.values()


def others(marker: str) -> list[int]:
    """Our children spawned with a job marker other than ``marker``.

    Each carries its own job's marker (set at spawn, inherited from nowhere else) and leads
    its own session, so a scan for ``marker`` or for that job's group can skip it.
    """
    return [pid for pid, owner in _owned.items() if owner is not None and owner != marker]
