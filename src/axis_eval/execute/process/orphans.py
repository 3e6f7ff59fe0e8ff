"""Adopted orphans: processes re-parented to this subreaper that no job marker names.

An agent's descendant that cleared its environment (``env -i``), left the agent's session
(``setsid``) and lost its parent (a double fork) carries nothing that names its job: the
marker scan and the group kill of :mod:`.kill` both miss it. As a child subreaper
(:func:`~.reaping.become_subreaper`) this process adopts it, though, so it can be found
among our own children, with no environment read: a child that no spawner registered
(:mod:`.children`) and that lives in another session than ours (an agent runs in a session
of its own, and a process can only leave a session for a new one, so every descendant of
an agent is outside ours, while anything this process starts without a new session stays
in it).

Who owns it is decided by its birth (:mod:`.activity`): an orphan born before every live
activity began belongs to none of them and is SIGKILLed (its process group too, when it
leads one); one born later is spared until the activities live at its birth are over, so a
concurrent job's own helpers are never killed while that job runs. The end of the run
(:meth:`~.sentinel.Sentinel.close`) kills whatever is left, whenever it was born.

This happens only while a run *claims* its orphans (:func:`claim`: the run's
:class:`~.sentinel.Sentinel` does, for the run's life): an API caller's or a task runner's
process is left alone, and so are the children it had before the claim (nothing born then
descends from the run). While claimed, every orphan seen is also reported to the claimant,
so the watchdog can kill it if this process dies without cleaning up. Not told apart: a
child the caller starts in a new session *during* the run without this package's spawners
(which register theirs); it is taken for an orphan.

Costs: one read of ``/proc/self/task/<pid>/children`` and a ``stat`` read per child that
is not registered (usually none), on each job's cleanup and each orphan-reaper pass.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

from axis_eval.execute.process import activity, children, procfs

__all__ = [
    "SWEEP_LIMIT_S",
    "Listener",
    "Orphan",
    "adopted",
    "claim",
    "claiming",
    "kill_unclaimed",
    "release",
    "reported",
    "sweep",
]

SWEEP_LIMIT_S = 5.0
"""A sweep's kill rounds give up after this long (a process stuck in D state cannot die)."""

Listener = Callable[[Mapping[int, int], Collection[int]], None]
"""Told ``(new orphans: pid → start tick, pids no longer adopted)`` as they are seen."""


class Orphan(NamedTuple):
    """A live adopted orphan: its pid, its start (clock ticks since boot), its group."""

    pid: int
    start: int
    pgid: int


_listeners: list[Listener] = []
_reported: dict[int, int] = {}
_since = 0
"""The tick of the first live claim: children born before it are not the run's."""


def claim(listener: Listener) -> None:
    """Kill unattributable orphans from now on and tell ``listener`` of every orphan seen."""
    global _since
    if not _listeners:
        _since = activity.now_ticks() - 1  # one tick early, as activities begin
    _listeners.append(listener)


def release(listener: Listener) -> None:
    """Undo :func:`claim` (the last release stops the killing)."""
    if listener in _listeners:
        _listeners.remove(listener)
    if not _listeners:
        _reported.clear()


def claiming() -> bool:
    """Whether a run claims this process's adopted orphans now."""
    return bool(_listeners)


def reported() -> Mapping[int, int]:
    """The orphans the listeners know of (pid → start tick): a live, read-only view."""
    return _reported


def adopted(since: int = 0) -> tuple[list[Orphan], list[tuple[int, int]]]:
    """Our live adopted orphans born at tick ``since`` or later, and our zombie children
    that are such orphans (pid, start tick)."""
    me = os.getpid()
    pids = procfs.children(me)
    if pids is None:  # a kernel without the children file: the slow way
        pids = procfs.children_by_scan(me)
    session = os.getsid(0)
    live: list[Orphan] = []
    zombies: list[tuple[int, int]] = []
    for pid in pids:
        if children.is_owned(pid):
            continue  # a spawner awaits it: an agent, the sentinel, a task runner's command
        info = procfs.process_info(pid)
        if info is None:
            continue
        state, ppid, pgid, sid, start = info
        if ppid != me or sid == session or start < since:
            continue  # started by this process in its own session (never an agent's), or
            # before the run's claim
        if state in ("Z", "X"):
            zombies.append((pid, start))
        else:
            live.append(Orphan(pid, start, pgid))
    return live, zombies


def _kill(pid: int, *, group: bool) -> None:
    # Our unreaped child: the pid cannot have been reused, and a group it leads holds its
    # own descendants only. Signalled here, not through .kill (which imports this module).
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)  # noqa: TID251 - this package's own signalling
        os.kill(pid, signal.SIGKILL)  # noqa: TID251 - as above
    except (ProcessLookupError, PermissionError):
        pass


def _reap(zombies: list[tuple[int, int]]) -> None:
    # A child not registered yet may have exited: its status is asyncio's. It was born
    # after its spawn began, so the zombies born before every spawn in flight are ours.
    since = children.in_flight_since() if children.in_flight() else None
    for pid, start in zombies:
        if since is not None and start >= since:
            continue
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _report(live: list[Orphan]) -> None:
    current = {orphan.pid: orphan.start for orphan in live}
    added = {pid: start for pid, start in current.items() if _reported.get(pid) != start}
    gone = [pid for pid in _reported if pid not in current]
    if not added and not gone:
        return
    for pid in gone:
        del _reported[pid]
    _reported.update(added)
    for listener in list(_listeners):
        listener(added, gone)


def kill_unclaimed(final: bool = False) -> int:
    """One pass while claimed: reap adopted zombies, report the living, SIGKILL those no
    live activity can own (with ``final``, every one born since the claim). Returns how
    many were signalled."""
    if not _listeners:
        return 0
    live, zombies = adopted(_since)
    if zombies:
        _reap(zombies)
    if not children.in_flight():  # else a child not registered yet would be reported
        _report(live)
    oldest = None if final else activity.oldest()
    killed = 0
    for orphan in live:
        if oldest is not None and orphan.start >= oldest:
            continue  # born while a running job was live: it may be that job's
        _kill(orphan.pid, group=orphan.pgid == orphan.pid)
        killed += 1
    return killed


async def sweep(final: bool = False) -> int:
    """:func:`kill_unclaimed` until a pass finds nothing to kill: a killed orphan's own
    children are adopted in turn once it is dead. Returns how many kills were sent."""
    total = 0
    deadline = time.monotonic() + SWEEP_LIMIT_S
    while killed := kill_unclaimed(final):
        total += killed
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.01)
    return total
