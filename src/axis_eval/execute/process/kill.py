"""Killing a whole job: its process group and every process carrying its marker.

A job's processes are its agent's process group plus every process on the machine whose
environment holds exactly the job's marker entry, so children that called ``setsid()`` or
were orphaned by a double fork go too, and no other job is touched. Not covered: a process
that clears its environment (``env -i``) *and* leaves the agent's process group, or one whose
``/proc/<pid>/environ`` we may not read.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Container

from axis_eval.execute.process import children, markers, procfs
from axis_eval.execute.process.reaping import reap_orphans

__all__ = ["KILL_LIMIT_S", "kill_marked", "kill_marked_now", "send_signal", "signal_group"]

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


def _kill_round(entry: bytes, pgid: int | None, skip: Container[int] = ()) -> bool:
    """SIGKILL the group and every marked process once; False when nothing was left."""
    pids = procfs.find(entry, pgid=pgid, skip=skip)
    if pgid is not None and any(_in_group(pid, pgid) for pid in pids):
        signal_group(pgid, signal.SIGKILL)  # atomic against forks inside the group
    for pid in pids:
        send_signal(pid, signal.SIGKILL)
    return bool(pids)


def kill_marked_now(marker: str, pgid: int | None = None) -> None:
    """SIGKILL everything marked ``marker`` (and in group ``pgid``) at once, blocking.

    For paths that cannot await (a cancelled stop): sweeps for up to a second.
    """
    entry = markers.marker_entry(marker)
    deadline = time.monotonic() + 1.0
    while _kill_round(entry, pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    reap_orphans()


async def kill_marked(marker: str, grace_s: float, *, pgid: int | None = None) -> None:
    """SIGTERM every process marked ``marker`` (and in group ``pgid``), then SIGKILL.

    Processes get up to ``grace_s`` seconds to exit after SIGTERM (new ones appearing in the
    meantime are sent SIGTERM too). The SIGKILL phase repeats until a scan finds nothing,
    since a process may fork while being killed. Zombie orphans are reaped along the way.
    A marker found clean and not spawned with since is not scanned again (see
    :mod:`.markers`).
    """
    spawns = markers.spawns_of(marker)
    if markers.known_clean(marker, pgid):
        reap_orphans()
        return
    entry = markers.marker_entry(marker)
    deadline = time.monotonic() + max(grace_s, 0.0)
    signalled: set[int] = set()
    pids = procfs.find(entry, pgid=pgid, skip=frozenset(children.others(marker)))
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
        pids = procfs.find(entry, pgid=pgid, skip=children.others(marker))
    kill_deadline = time.monotonic() + KILL_LIMIT_S
    while pids and time.monotonic() < kill_deadline:
        if not _kill_round(entry, pgid, children.others(marker)):
            pids = []
            break
        await asyncio.sleep(0.01)
        reap_orphans()
    reap_orphans()
    if not pids and spawns and markers.spawns_of(marker) == spawns and procfs.last_find_certain:
        markers.note_clean(marker, spawns, pgid)  # only markers spawn() sets: see .markers
