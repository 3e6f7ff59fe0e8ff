"""Child reaping: the subreaper switch, the orphan reaper, and asyncio's pidfd child watcher.

As a child subreaper (:func:`become_subreaper`), this process adopts its descendants'
orphans, as PID 1 does; :func:`reap_orphans` and :class:`OrphanReaper` collect those that are
not registered in :mod:`.children` (whose statuses their spawners await), by pid and never
with ``waitpid(-1)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVarTuple, Unpack

from axis_eval.execute.process import children, fds, orphans, procfs

__all__ = [
    "OrphanReaper",
    "become_subreaper",
    "is_subreaper",
    "pidfd_child_watcher",
    "reap_orphans",
    "subreaper",
]

_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37


def become_subreaper(enabled: bool = True) -> bool:
    """Make this process a child subreaper (or stop being one); True when prctl succeeded."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        value = ctypes.c_int(0)
        if int(libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)) != 0:
            return False
        return value.value != 0
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """Be a child subreaper within the block (it gets whether prctl succeeded); afterwards
    the state found is restored, so an API caller's process is left as it was."""
    was = is_subreaper()
    became = become_subreaper()
    try:
        yield became
    finally:
        if not was:
            become_subreaper(False)


def reap_orphans() -> list[int]:
    """Reap zombie children no one here awaits (adopted orphans); return their pids."""
    # While spawns are in flight only the zombies born before the oldest of them: a new
    # child may exit before its pid is registered, and its status is its spawner's.
    since = children.in_flight_since() if children.in_flight() else None
    return procfs.reap_zombie_children(skip=children.owned(), born_before=since)


class OrphanReaper:
    """Periodically reaps zombie orphans adopted by this (subreaper) process.

    Only pids no spawner registered are reaped, so asyncio keeps its own children's exit
    codes. While a run claims the orphans (:mod:`.orphans`), each pass also kills the live
    ones no running job can own and reports the others to the run's watchdog. Use as
    ``async with OrphanReaper():`` or call :meth:`start` and :meth:`stop`.
    Children started outside :mod:`.children`'s registry (e.g. ``subprocess`` in another
    thread) may have their exit status taken by the reaper; start them on the event loop
    thread through this package, or register them.
    """

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.reaped = 0
        """How many orphans this reaper has reaped so far."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin reaping on the running event loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop reaping, after one last pass."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.reaped += len(reap_orphans())

    async def _run(self) -> None:
        while True:
            self.reaped += len(reap_orphans())
            orphans.kill_unclaimed()  # nothing unless a run claims them: one children read
            await asyncio.sleep(self.interval_s)

    async def __aenter__(self) -> OrphanReaper:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


@contextlib.contextmanager
def pidfd_child_watcher() -> Iterator[None]:
    """Within the block, asyncio learns of child exits through pidfds (on Python 3.11).

    3.11's default ``ThreadedChildWatcher`` starts a thread per child that blocks in
    ``waitpid()``; a pidfd in the event loop's selector does the same without a thread
    (less CPU a job, and no thread beside the agents). 3.12 and later pick the pidfd
    watcher by themselves (and deprecate choosing one), so nothing changes there; neither
    does it on a kernel without ``pidfd_open`` (before 5.3). The previous watcher is put
    back afterwards: an API caller's process is left as it was.
    """
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        yield
        return
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # the call exists but the kernel refuses it (a seccomp filter, …)
        yield
        return
    policy = asyncio.get_event_loop_policy()
    previous = policy.get_child_watcher()
    policy.set_child_watcher(_PidfdWatcher())
    try:
        yield
    finally:
        policy.set_child_watcher(previous)


_Ts = TypeVarTuple("_Ts")


class _PidfdWatcher(asyncio.PidfdChildWatcher):
    """asyncio's pidfd watcher, except that a child it has no descriptor left for (EMFILE)
    is waited for by a thread, as the default watcher does: its spawn has already started
    it, so failing here would leave it running with no one to reap it."""

    def add_child_handler(
        self, pid: int, callback: Callable[[int, int, Unpack[_Ts]], object], *args: *_Ts
    ) -> None:
        try:
            super().add_child_handler(pid, callback, *args)
        except OSError as exc:
            if not fds.exhausted(exc):
                raise
            loop = asyncio.get_running_loop()
            waiter = threading.Thread(
                target=_wait_in_thread, args=(loop, pid, callback, args), daemon=True
            )
            waiter.start()


def _wait_in_thread(
    loop: asyncio.AbstractEventLoop,
    pid: int,
    callback: Callable[[int, int, Unpack[_Ts]], object],
    args: tuple[*_Ts],
) -> None:
    """Wait for ``pid`` (that pid only: no other child's status is taken), then report its
    exit on ``loop``."""
    try:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        code = 255  # reaped elsewhere: what asyncio's watchers report then
    if not loop.is_closed():
        loop.call_soon_threadsafe(callback, pid, code, *args)
