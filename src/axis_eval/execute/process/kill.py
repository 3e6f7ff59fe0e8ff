"""Killing a whole job: its process group and every process carrying its marker.

A job's processes are its agent's process group plus every process on the machine whose
environment holds exactly the job's marker entry, so children that called ``setsid()`` or
were orphaned by a double fork go too, and no other job is touched. A process that clears its
environment (``env -i``) *and* leaves the agent's process group is neither: while a run
claims its orphans (:mod:`.orphans`), :func:`kill_marked` ends by killing the adopted ones no
live job can own, once the marker is found clean.

A process spawned without a marker (a task runner's command or helper) is covered by its
process group alone: :func:`kill_group`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Collection, Container

from axis_eval.execute.process import activity, children, markers, orphans, procfs
from axis_eval.execute.process.reaping import reap_orphans

__all__ = [
    "KILL_LIMIT_S",
    "kill_group",
    "kill_marked",
    "kill_marked_now",
    "send_signal",
    "signal_group",
]

KILL_LIMIT_S = 5.0
"""SIGKILL rounds give up after this long (a process stuck in D state cannot die)."""
_POLL_S = 0.05


def send_signal(pid: int, sig: int) -> None:
    """Send ``sig`` to ``pid``; a process that is gone (or not ours) is ignored."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pgid``; a group that is gone is ignored."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _in_group(pid: int, pgid: int) -> bool:
    info = procfs.stat(pid)
    return info is not None and info[2] == pgid


def _find(entry: bytes | None, pgid: int | None, skip: Container[int] = ()) -> list[int]:
    """The live processes of a job: marked with ``entry`` or in group ``pgid`` (no entry:
    the group alone, without reading any environment)."""
    if entry is None:
        return [] if pgid is None else procfs.group_members(pgid)
    return procfs.find(entry, pgid=pgid, skip=skip)


def _kill_round(entry: bytes | None, pgid: int | None, skip: Container[int] = ()) -> bool:
    """SIGKILL the group and every marked process once; False when nothing was left."""
    pids = _find(entry, pgid, skip)
    if pgid is not None and any(_in_group(pid, pgid) for pid in pids):
        signal_group(pgid, signal.SIGKILL)  # atomic against forks inside the group
    for pid in pids:
        send_signal(pid, signal.SIGKILL)
    return bool(pids)


def kill_marked_now(marker: str | None, pgid: int | None = None) -> None:
    """SIGKILL everything marked ``marker`` (and in group ``pgid``) at once, blocking.

    For paths that cannot await (a cancelled stop): sweeps for up to a second. Without a
    marker only the group is killed.
    """
    entry = None if marker is None else markers.marker_entry(marker)
    deadline = time.monotonic() + 1.0
    while _kill_round(entry, pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    reap_orphans()


async def _terminate(
    entry: bytes | None,
    grace_s: float,
    pgid: int | None,
    skip: Callable[[], Collection[int]],
    on_kill: Callable[[], object] | None,
) -> tuple[bool, bool]:
    """SIGTERM (and SIGCONT) what :func:`_find` finds, up to ``grace_s`` for it to go, then
    SIGKILL rounds until a scan finds nothing. Returns (SIGKILL was needed, the last scan
    found nothing)."""
    deadline = time.monotonic() + max(grace_s, 0.0)
    signalled: set[int] = set()
    pids = _find(entry, pgid, frozenset(skip()))
    while pids:
        for pid in pids:
            if pid not in signalled:
                signalled.add(pid)
                send_signal(pid, signal.SIGTERM)
                send_signal(pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(_POLL_S)
        reap_orphans()
        pids = _find(entry, pgid, skip())
    if not pids:
        return False, True
    if on_kill is not None:
        on_kill()
    kill_deadline = time.monotonic() + KILL_LIMIT_S
    while time.monotonic() < kill_deadline:
        if not _kill_round(entry, pgid, skip()):
            return True, True
        await asyncio.sleep(0.01)
        reap_orphans()
    return True, False


async def kill_group(
    pgid: int, grace_s: float, *, on_kill: Callable[[], object] | None = None
) -> bool:
    """SIGTERM every live process of group ``pgid``, SIGKILL what is left after ``grace_s``.

    The marker-less :func:`kill_marked`: for a process spawned without a job marker, whose
    tree is its group. ``on_kill()`` is called before the SIGKILL, if one is needed. Zombie
    orphans are reaped along the way. Returns True when SIGKILL was needed.
    """
    killed, _ = await _terminate(None, grace_s, pgid, tuple, on_kill)
    reap_orphans()
    return killed


async def kill_marked(
    marker: str,
    grace_s: float,
    *,
    pgid: int | None = None,
    on_kill: Callable[[], object] | None = None,
) -> bool:
    """SIGTERM every process marked ``marker`` (and in group ``pgid``), then SIGKILL.

    Processes get up to ``grace_s`` seconds to exit after SIGTERM (new ones appearing in the
    meantime are sent SIGTERM too). The SIGKILL phase repeats until a scan finds nothing,
    since a process may fork while being killed; ``on_kill()`` is called before it, if it
    is needed. Zombie orphans are reaped along the way. A marker found clean and not
    spawned with since is not scanned again (see :mod:`.markers`). Returns True when
    SIGKILL was needed.
    """
    spawns = markers.spawns_of(marker)
    if markers.known_clean(marker, pgid):
        reap_orphans()
        await _after_clean(marker, spawns)
        return False
    entry = markers.marker_entry(marker)
    killed, clean = await _terminate(entry, grace_s, pgid, lambda: children.others(marker), on_kill)
    reap_orphans()
    if clean and spawns and markers.spawns_of(marker) == spawns and procfs.last_find_certain:
        markers.note_clean(marker, spawns, pgid)  # only markers spawn() sets: see .markers
    if clean:
        await _after_clean(marker, spawns)
    return killed


async def _after_clean(marker: str, spawns: int) -> None:
    """Nothing marked ``marker`` is left: unless it spawned again meanwhile, it can own no
    orphan any more, and the adopted orphans no live activity can own go (:mod:`.orphans`)."""
    if markers.spawns_of(marker) == spawns:
        activity.end(marker)
    if orphans.claiming():
        await orphans.sweep()
