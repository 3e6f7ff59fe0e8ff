"""/proc scans (which processes carry a job marker) and reaping of zombie children.

Stdlib only, so the watchdog (:mod:`.sentinel_main`) can import it without slowing its
start. Nothing here sends signals; every read tolerates processes that vanish or that we may
not inspect.
"""

from __future__ import annotations

import os
from collections.abc import Container
from functools import cache

MARKER_KEY = "AXIS_JOB_MARKER"
"""Environment variable every process of a job carries: ``<run_token>/<job_id>``."""

_PROC = "/proc"


def marker_entry(marker: str) -> bytes:
    """The raw ``KEY=value`` environment entry for ``marker``, as /proc shows it."""
    return f"{MARKER_KEY}={marker}".encode()


_preexisting: set[int] = set()
"""Pids alive before the run's first job: they cannot carry one of its markers, so scans
skip reading their environments. A pid leaves the set as soon as a scan no longer sees it,
so a reused pid is always inspected."""


def mark_preexisting() -> None:
    """Remember every process alive now as one no job can have started."""
    _preexisting.clear()
    _preexisting.update(_pids())


def _pids() -> list[int]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return []
    return [int(name) for name in names if name.isdigit()]


_READ_BYTES = 64 * 1024


def _read(path: str) -> bytes | None:
    """The whole of a /proc file, or None when it is gone or not ours to read.

    Straight on the descriptor: a file object costs three more system calls a read (fstat,
    ioctl, lseek), and the reaper and the scans read many of these files. Read until the
    end, never less: a /proc list file returns one page a read whatever is asked.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # gone, or not ours to read
        return None
    try:
        parts = []
        while chunk := os.read(fd, _READ_BYTES):
            parts.append(chunk)
        return b"".join(parts)  # (one part: join returns it, no copy)
    except OSError:  # the process went away between the open and the read
        return None
    finally:
        os.close(fd)


def stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgrp)`` of ``pid``, or None when it is gone."""
    info = process_info(pid)
    return None if info is None else info[:3]


def process_info(pid: int) -> tuple[str, int, int, int, int] | None:
    """``(state, ppid, pgrp, session, start)`` of ``pid`` (start: clock ticks since boot,
    field 22), or None when it is gone."""
    raw = _read(f"{_PROC}/{pid}/stat")
    if raw is None:
        return None
    fields = raw.rpartition(b")")[2].split()  # the command name may hold spaces and ")"
    try:
        return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (IndexError, ValueError):
        return None


def children(pid: int) -> list[int] | None:
    """The children of ``pid``'s main thread, from ``/proc/<pid>/task/<pid>/children``;
    None when the kernel has no such file (built without ``CONFIG_PROC_CHILDREN``) or the
    process is gone.

    Orphans re-parented to a subreaper go to its main thread (the kernel hands them to the
    first live thread of the group, the leader while it lives), so for a subreaper whose
    main thread runs the event loop this lists its adopted orphans and the children it
    spawned: one read instead of a stat() of every process on the machine.
    """
    raw = _read(f"{_PROC}/{pid}/task/{pid}/children")
    if raw is None:
        return None
    return [int(item) for item in raw.split()]


def all_children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (a whole /proc scan without children files)."""
    if not _has_children_files():
        return children_by_scan(pid)  # a kernel built without the children files
    try:
        tasks = os.listdir(f"{_PROC}/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        raw = _read(f"{_PROC}/{pid}/task/{task}/children")  # None: that thread ended
        if raw is not None:
            found.extend(int(item) for item in raw.split())
    return found


@cache
def _has_children_files() -> bool:
    """Whether the kernel has ``/proc/<pid>/task/<tid>/children`` (a build option)."""
    return os.path.exists(f"{_PROC}/self/task/{os.getpid()}/children")


def children_by_scan(ppid: int, state: str | None = None) -> list[int]:
    """Every process whose parent is ``ppid`` (any of its threads), only those in ``state``
    when given (``"Z"``: zombies): a whole /proc scan."""
    found: list[int] = []
    for pid in _pids():
        info = stat(pid)
        if info is not None and info[1] == ppid and (state is None or info[0] == state):
            found.append(pid)
    return found


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is neither a zombie nor dead."""
    info = stat(pid)
    return info is not None and info[0] not in ("Z", "X")


last_find_certain = True
"""False when the last :func:`find` met a process (born after the run started) that exited
or turned zombie before its environment could be read: an empty answer then proves nothing
about processes it may have forked after the listing."""


def group_running(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count)."""
    return bool(group_members(pgid))


def group_members(pgid: int) -> list[int]:
    """Live pids (never our own) of process group ``pgid``; zombies do not count."""
    if not group_exists(pgid):
        return []  # one kill(0) instead of a stat() read per process
    me = os.getpid()
    found: list[int] = []
    for pid in _pids():
        info = stat(pid)
        if pid != me and info is not None and info[2] == pgid and info[0] not in ("Z", "X"):
            found.append(pid)
    return found


def group_exists(pgid: int) -> bool:
    """Whether any process (a zombie included) is in process group ``pgid``: one kill(0)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def find(
    entry: bytes,
    *,
    prefix: bool = False,
    pgid: int | None = None,
    skip: Container[int] = (),
) -> list[int]:
    """Live pids (never our own) whose environment holds ``entry`` or that belong to ``pgid``.

    With ``prefix`` an environment entry only has to start with ``entry``; otherwise the whole
    ``KEY=value`` entry must equal it. A zombie's environment reads as empty, so zombies never
    match on the marker; with ``pgid`` their state is checked explicitly. Pids in ``skip``
    are known to the caller to carry neither (its own children with another marker) and are
    not read.
    """
    global last_find_certain
    me = os.getpid()
    found: list[int] = []
    certain = True
    if pgid is not None and not group_exists(pgid):
        pgid = None  # an empty group: no stat() read per process to look for members
    pids = _pids()
    if _preexisting:
        _preexisting.intersection_update(pids)
    for pid in pids:
        if pid == me or pid in _preexisting or pid in skip:
            continue
        if pgid is not None:
            info = stat(pid)
            if info is None or info[0] in ("Z", "X"):
                certain = False
                continue
            if info[2] == pgid:
                found.append(pid)
                continue
        raw = _read(f"{_PROC}/{pid}/environ")
        if not raw:
            # Gone or a zombie by now: it may have been a marked process that forked a
            # child this listing missed (a daemonizing double fork), so nothing is proved.
            # (Kernel threads and processes not ours to read have no readable environment
            # either, but are alive: another scan would learn nothing more from them.)
            if certain and not is_running(pid):
                certain = False
            continue
        entries = raw.split(b"\0")
        if prefix:
            if any(item.startswith(entry) for item in entries):
                found.append(pid)
        elif entry in entries:
            found.append(pid)
    last_find_certain = certain
    return found


def zombie_children(ppid: int) -> list[int]:
    """Zombie processes whose parent is ``ppid`` (orphans adopted by a subreaper included)."""
    return children_by_scan(ppid, "Z")


def reap_zombie_children(skip: Container[int], born_before: int | None = None) -> list[int]:
    """``waitpid()`` our zombie children except those in ``skip`` (and, with
    ``born_before``, those born at that tick or later); return the reaped pids.

    A cheap ``waitid(WNOWAIT)`` peek comes first, so nothing is read unless some child is
    waiting to be reaped; then our children file (one read, not a scan of the machine's
    processes: a busy machine's churn costs nothing here). Pids in ``skip`` are left to
    whoever owns their status.
    """
    try:
        if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return []
    except ChildProcessError:  # no children at all
        return []
    me = os.getpid()
    pids = children(me)
    if pids is None:  # a kernel without the children file: the slow way
        pids = zombie_children(me)
    reaped: list[int] = []
    for pid in pids:
        if pid in skip:
            continue
        info = process_info(pid)
        if info is None or info[0] != "Z" or info[1] != me:
            continue
        if born_before is not None and info[4] >= born_before:
            continue  # maybe a spawn in flight's own child: its status is not ours
        try:
            got, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if got:
            reaped.append(got)
    return reaped
