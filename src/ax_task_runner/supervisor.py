"""PID-1 duties: the task command in its own group, helper processes, orphans, stop signals.

The only module of the runner that starts or signals processes. The process control itself
is axis_eval's (:mod:`axis_eval.execute.process`, imported on first use so the runner starts
fast): its ``/proc`` reading, group signals, subreaper switch and orphan reaper, and its one
registry of awaited children (:mod:`axis_eval.execute.process.children`). Every process
started here is registered there, as goal agents (spawned by axis_eval) are, so whether the
runner is PID 1 or embedded in axis-eval's process there is one reaping state: orphans are
reaped by pid, never with ``waitpid(-1)``, and only when no one else owns their status, so
the command's exit code is never stolen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
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


class SpawnError(Exception):
    """A program could not be started; ``exit_code`` is the shell's code for it (126/127)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def share_children_with_axis_eval() -> None:
    """Nothing left to do: kept for callers about to spawn through axis_eval.

    The runner's children and axis_eval's are one registry
    (:mod:`axis_eval.execute.process.children`): every process started here is registered
    there from its spawn on, so the two never take each other's exit statuses and there is
    nothing to copy when axis_eval is first imported.
    """


async def _start(
    argv: list[str], *, cwd: str, env: dict[str, str], stdin: Any, stdout: Any, stderr: Any
) -> asyncio.subprocess.Process:
    """Start ``argv`` as the leader of a new process group (same session), registered as an
    awaited child: :func:`reap_orphans` never takes its status (release it once reaped)."""
    from axis_eval.execute.process import children

    if not argv:
        raise SpawnError("empty command", 127)
    with children.spawning():
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
        children.own(proc.pid)
    return proc


def _release(pid: int) -> None:
    from axis_eval.execute.process import children

    children.release(pid)


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
    from axis_eval.execute.process import kill

    kill.signal_group(pgid, sig)


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
        signal_group(proc.pid, signal.SIGKILL)
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
    from axis_eval.execute.process.procfs import group_running

    running = leader is not None and leader.returncode is None
    if not running and not group_running(pgid):
        return False
    event(log, logging.INFO, "stopping task command", pid=pgid, gracePeriod=f"{grace_s:g}s")
    signal_group(pgid, signal.SIGTERM)
    signal_group(pgid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
    deadline = time.monotonic() + max(grace_s, 0.0)
    while time.monotonic() < deadline:
        if (leader is None or leader.returncode is not None) and not group_running(pgid):
            return False
        await asyncio.sleep(_POLL_S)
    event(
        log,
        logging.WARNING,
        "task command did not exit within grace period; killing",
        pid=pgid,
        gracePeriod=f"{grace_s:g}s",
    )
    signal_group(pgid, signal.SIGKILL)
    if leader is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(leader.wait(), _KILL_WAIT_S)
    return True


def reap_orphans() -> list[int]:
    """Reap zombie children no one else owns (adopted orphans); return their pids."""
    from axis_eval.execute.process import reaping

    return reaping.reap_orphans()


def become_subreaper() -> bool:
    """Adopt orphaned descendants like PID 1 does (``PR_SET_CHILD_SUBREAPER``)."""
    from axis_eval.execute.process import reaping

    return reaping.become_subreaper()


class OrphanReaper:
    """Reaps adopted orphans every ``interval_s``: axis_eval's reaper, on the shared state."""

    def __init__(self, interval_s: float = 0.25) -> None:
        from axis_eval.execute.process import reaping

        self._reaper = reaping.OrphanReaper(interval_s)

    @property
    def reaped(self) -> int:
        """How many orphans were reaped so far."""
        return self._reaper.reaped

    def start(self) -> None:
        """Begin reaping on the running loop."""
        self._reaper.start()

    async def stop(self) -> None:
        """Stop, after one last pass."""
        await self._reaper.stop()


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
