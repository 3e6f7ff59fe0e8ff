"""Job markers: the ``AXIS_JOB_MARKER=<run_token>/<job_id>`` entry every process of a job carries.

:func:`~.spawning.spawn` sets it and descendants inherit it, so a job's processes can be found
(and killed) even when they left the agent's process group.

This module also keeps what :func:`~.kill.kill_marked` learnt: the markers whose last scan
found nothing, with the number of spawns of that marker then and the process group the scan
also covered. Every marked process descends from a spawn of its marker, so until the next
spawn none can appear, and a job's final cleanup after its agent's stop can skip a second
/proc scan. A scan that met a process exiting under it (it may have forked a child after the
listing: a daemonizing double fork) proves nothing and is not remembered. Markers never
spawned here are always scanned.
"""

from __future__ import annotations

import os
import secrets

from axis_eval.execute.process import activity, procfs
from axis_eval.execute.process.procfs import MARKER_KEY, marker_entry

__all__ = [
    "MARKER_KEY",
    "count_spawn",
    "forget_marker",
    "ignore_existing_processes",
    "known_clean",
    "marked_pids",
    "marker_entry",
    "new_run_token",
    "note_clean",
    "remembers",
    "spawns_of",
]

_spawns: dict[str, int] = {}
_clean: dict[str, tuple[int, int | None]] = {}


def new_run_token() -> str:
    """A token unique to this axis run; job markers are ``<token>/<job_id>``."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def marked_pids(marker: str) -> list[int]:
    """Live (non-zombie) pids, other than ours, carrying exactly ``AXIS_JOB_MARKER=<marker>``."""
    return procfs.find(marker_entry(marker))


def ignore_existing_processes() -> None:
    """Call before a run's first job: later marker scans skip processes alive now."""
    procfs.mark_preexisting()


def count_spawn(marker: str) -> None:
    """A process with ``marker`` is about to start (call before it exists); the marker is a
    live activity until it is found clean (:mod:`.activity`)."""
    _spawns[marker] = _spawns.get(marker, 0) + 1
    activity.begin(marker)


def spawns_of(marker: str) -> int:
    """How many processes were spawned with ``marker`` so far."""
    return _spawns.get(marker, 0)


def note_clean(marker: str, spawns: int, pgid: int | None) -> None:
    """A certain scan for ``marker`` (and group ``pgid``) found nothing after ``spawns``."""
    _clean[marker] = (spawns, pgid)


def known_clean(marker: str, pgid: int | None) -> bool:
    """Whether nothing with ``marker`` (or in ``pgid``) can be running: the last certain scan
    found nothing and no process was spawned with it since."""
    known = _clean.get(marker)
    if known is None or known[0] != spawns_of(marker):
        return False
    return pgid is None or known[1] == pgid


def remembers(marker: str) -> bool:
    """Whether anything is remembered about ``marker`` (until :func:`forget_marker`)."""
    return marker in _clean or marker in _spawns


def forget_marker(marker: str) -> None:
    """Drop what :func:`~.kill.kill_marked` remembers about ``marker`` (its job is over)."""
    _clean.pop(marker, None)
    _spawns.pop(marker, None)
    activity.end(marker)
