"""PID-1 duties: the task command in its own group, helper processes, orphans, stop signals.

The only module of the runner that starts or signals processes. (Goal agents are started
by :mod:`axis_eval.execute.process`; :func:`share_children_with_axis_eval` keeps the two
orphan reapers from taking each other's exit statuses.)

Orphans are reaped by pid, never with ``waitpid(-1)``: a zombie is only collected when no
one else owns its status, so the command's exit code is never stolen.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ax_task_runner.logs import event

__all__ = [
    "Command",
    "CommandExit",
    "HelperResult",
    "OrphanReaper",
    "SpawnError",
    "become_subreaper",
    "on_stop_signals",
    "reap_orphans",
    "run_helper",
    "share_children_with_axis_eval",
    "signal_group",
    "start_process",
    "stop_group",
    "wait_process",
]

log = logging.getLogger(__name__)

_POLL_S = 0.05
_KILL_WAIT_S = 5.0
_PR_SET_CHILD_SUBREAPER = 36

_managed: set[int] = set()
"""Children whose exit status belongs to asyncio (the command, helpers): never reaped here."""
_spawning = 0
"""Spawns in flight: their pid is not in ``_managed`` yet, so reaping waits."""


class SpawnError(Exception):
    """A program could not be started; ``exit_code`` is the shell's code for it (126/127)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _axis_process() -> Any:
    """axis_eval's process module when something imported it (goal agents), else None."""
    return sys.modules.get("axis_eval.execute.process")


@contextlib.contextmanager
def _spawn_window() -> Iterator[None]:
    global _spawning
    axis = _axis_process()
    _spawning += 1
    if axis is not None:
        axis._spawning += 1
    try:
        yield
    finally:
        _spawning -= 1
        if axis is not None:
            axis._spawning -= 1


def _own(pid: int) -> None:
    _managed.add(pid)
    axis = _axis_process()
    if axis is not None:
        axis._managed[pid] = None  # no job marker known: axis's scans still read it


def _release(pid: int) -> None:
    _managed.discard(pid)
    axis = _axis_process()
    if axis is not None:
        axis._managed.pop(pid, None)


def share_children_with_axis_eval() -> None:
    """Tell axis_eval's orphan reaper which children are ours (call after importing it)."""
    axis = _axis_process()
    if axis is not None:
        axis._managed.update(dict.fromkeys(_managed))


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgrp)`` from /proc, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    fields = raw.rpartition(b")")[2].split()
    try:
        return fields[0].decode(), int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies do not count)."""
    for pid in _pids():
        info = _stat(pid)
        if info is not None and info[2] == pgid and info[0] not in ("Z", "X"):
            return True
    return False


async def _start(
    argv: list[str], *, cwd: str, env: dict[str, str], stdin: Any, stdout: Any, stderr: Any
) -> asyncio.subprocess.Process:
    """Start ``argv`` as the leader of a new process group (same session)."""
    if not argv:
        raise SpawnError("empty command", 127)
    with _spawn_window():
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=stdin,
                stdout=stdout,
                stderr=stderr,
                process_group=0,
            )
        except OSError as exc:
            if exc.filename is not None and os.fsdecode(exc.filename) == cwd:
                message = f"cannot use working directory {cwd}: {exc.strerror}"
                raise SpawnError(message, 126) from None
            if isinstance(exc, FileNotFoundError):
                raise SpawnError(f"executable file not found: {argv[0]}", 127) from None
            raise SpawnError(f"cannot start {argv[0]}: {exc.strerror or exc}", 126) from None
        _own(proc.pid)
    return proc


async def start_process(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    stdin: Any = subprocess.PIPE,
    stdout: Any = subprocess.PIPE,
    stderr: Any = subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """Start a process as the leader of its own group, safe from the orphan reaper.

    For other runner modules that must start processes (the guest services): the pid
    is registered so :func:`reap_orphans` never takes its exit status. Collect it with
    :func:`wait_process`; signal the group with :func:`signal_group`.

    Raises:
        SpawnError: it could not be started (``exit_code`` 126 or 127).
    """
    return await _start(argv, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr)


async def wait_process(proc: asyncio.subprocess.Process) -> int:
    """Wait for a process from :func:`start_process`; its return code (negative: signal)."""
    try:
        return await proc.wait()
    finally:
        if proc.returncode is not None:
            _release(proc.pid)


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group; a group that is gone is ignored."""
    _signal_group(pgid, sig)


@dataclass(frozen=True)
class HelperResult:
    """A finished helper (git): exit status and its combined stdout and stderr."""

    returncode: int
    output: str


async def run_helper(
    argv: list[str], *, cwd: str, env: dict[str, str], timeout_s: float | None = None
) -> HelperResult:
    """Run a short-lived program, stdin from /dev/null, output captured.

    On cancellation or timeout (:class:`TimeoutError`) its whole group is killed first.

    Raises:
        SpawnError: it could not be started.
    """
    proc = await _start(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except BaseException:
        _signal_group(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), _KILL_WAIT_S)
        raise
    finally:
        _release(proc.pid)
    code = proc.returncode
    return HelperResult(code if code is not None else -1, out.decode("utf-8", "replace"))


@dataclass(frozen=True)
class CommandExit:
    """How the task command finished (what ``on_command_exit`` receives)."""

    pid: int | None
    """None when the command could not be started."""
    exit_code: int
    """The exit status; -1 when a signal killed it (as upstream reports); 126/127 when it
    could not be started."""
    signal: int | None = None
    """The signal that killed it."""
    error: str | None = None
    """None for a zero exit; otherwise ``exit status N``, ``signal: killed`` or why it
    could not start."""


def _exit_of(pid: int, code: int) -> CommandExit:
    if code < 0:
        name = (signal.strsignal(-code) or f"signal {-code}").lower()  # as Go prints it
        return CommandExit(pid, -1, -code, f"signal: {name}")
    return CommandExit(pid, code, None, None if code == 0 else f"exit status {code}")


class Command:
    """``spec.command``: argv without a shell, its own process group, the runner's stdio."""

    def __init__(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = env
        self._proc: asyncio.subprocess.Process | None = None
        self._exit: CommandExit | None = None

    @property
    def pid(self) -> int | None:
        """The command's pid (= its process group id) once started."""
        return self._proc.pid if self._proc is not None else None

    async def start(self) -> int:
        """Start it; returns the pid.

        Raises:
            SpawnError: the program is missing, not executable, or the cwd is unusable.
        """
        self._proc = await _start(
            self.argv, cwd=self.cwd, env=self.env, stdin=None, stdout=None, stderr=None
        )
        return self._proc.pid

    async def wait(self) -> CommandExit:
        """Wait for the command itself to exit."""
        assert self._proc is not None, "start() first"
        if self._exit is None:
            code = await self._proc.wait()
            _release(self._proc.pid)
            self._exit = _exit_of(self._proc.pid, code)
        return self._exit

    async def stop(self, grace_s: float) -> CommandExit:
        """SIGTERM its group, SIGKILL whatever is left after ``grace_s``; its exit."""
        assert self._proc is not None, "start() first"
        await stop_group(self._proc.pid, grace_s, leader=self._proc)
        return await self.wait()


async def stop_group(
    pgid: int, grace_s: float, *, leader: asyncio.subprocess.Process | None = None
) -> bool:
    """SIGTERM the group, wait up to ``grace_s`` for it to empty, then SIGKILL it.

    Returns True when SIGKILL was needed.
    """
    running = leader is not None and leader.returncode is None
    if not running and not _group_alive(pgid):
        return False
    event(log, logging.INFO, "stopping task command", pid=pgid, gracePeriod=f"{grace_s:g}s")
    _signal_group(pgid, signal.SIGTERM)
    _signal_group(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    deadline = time.monotonic() + max(grace_s, 0.0)
    while time.monotonic() < deadline:
        if (leader is None or leader.returncode is not None) and not _group_alive(pgid):
            return False
        await asyncio.sleep(_POLL_S)
    event(
        log,
        logging.WARNING,
        "task command did not exit within grace period; killing",
        pid=pgid,
        gracePeriod=f"{grace_s:g}s",
    )
    _signal_group(pgid, signal.SIGKILL)
    if leader is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leader.wait(), _KILL_WAIT_S)
    return True


def _zombie_children(ppid: int) -> list[int]:
    found = []
    for pid in _pids():
        info = _stat(pid)
        if info is not None and info[0] == "Z" and info[1] == ppid:
            found.append(pid)
    return found


def reap_orphans() -> list[int]:
    """Reap zombie children no one else owns (adopted orphans); return their pids."""
    axis = _axis_process()
    if _spawning or (axis is not None and axis._spawning):
        return []
    try:
        if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return []
    except ChildProcessError:
        return []
    skip = set(_managed) | (set(axis._managed) if axis is not None else set())
    reaped: list[int] = []
    for pid in _zombie_children(os.getpid()):
        if pid in skip:
            continue
        try:
            got, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if got:
            reaped.append(got)
    return reaped


def become_subreaper() -> bool:
    """Adopt orphaned descendants like PID 1 does (``PR_SET_CHILD_SUBREAPER``)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class OrphanReaper:
    """Reaps adopted orphans every ``interval_s`` (a cheap ``waitid`` peek first)."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self.reaped = 0
        """How many orphans were reaped so far."""
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin reaping on the running loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop, after one last pass."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.reaped += len(reap_orphans())

    async def _run(self) -> None:
        while True:
            self.reaped += len(reap_orphans())
            await asyncio.sleep(self.interval_s)


def on_stop_signals(callback: Callable[[signal.Signals], None]) -> Callable[[], None]:
    """Call ``callback(sig)`` on SIGTERM and SIGINT (PID 1 must handle them); returns undo."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, callback, sig)

    def remove() -> None:
        for sig in signals:
            loop.remove_signal_handler(sig)

    return remove
