"""PID-1 duties: the task command in its own group, helper processes, orphans, stop signals.

The only module of the runner that starts or signals processes. The process control itself
is axis_eval's (:mod:`axis_eval.execute.process`, imported on first use so the runner starts
fast): every process is started with its :func:`~axis_eval.execute.process.spawn` and ended
with its tree-stop (:meth:`~axis_eval.execute.process.AgentProcess.stop`). Unlike an agent,
a runner process carries no job marker (the task's environment stays exactly as specified;
its tree is its process group) and leads a new group in the runner's session. ``spawn``
registers every child in the package's one registry of awaited children, so whether the
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ax_task_runner.logs import event

if TYPE_CHECKING:
    from axis_eval.execute.process import AgentProcess, SpawnFailed, Stdio

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
    "signal_group",
    "start_process",
    "wait_process",
]

log = logging.getLogger(__name__)

_PIPE = asyncio.subprocess.PIPE
_DEVNULL = asyncio.subprocess.DEVNULL
_STDOUT = asyncio.subprocess.STDOUT


class SpawnError(Exception):
    """A program could not be started; ``exit_code`` is the shell's code for it (126/127)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _spawn_error(exc: SpawnFailed, program: str, cwd: str) -> SpawnError:
    """The runner's wording (upstream's) for a program that could not start."""
    if exc.exit_code == 127:
        return SpawnError(f"executable file not found: {program}", 127)
    cause = exc.__cause__
    if not isinstance(cause, OSError):
        return SpawnError(str(exc), exc.exit_code)
    if cause.filename is not None and os.fsdecode(cause.filename) == cwd:
        return SpawnError(f"cannot use working directory {cwd}: {cause.strerror}", 126)
    return SpawnError(f"cannot start {program}: {cause.strerror or cause}", 126)


async def _start(
    argv: list[str], *, cwd: str, env: dict[str, str], stdio: Stdio, stdin_pipe: bool = False
) -> AgentProcess:
    """Start ``argv`` as the leader of a new process group (same session), without a job
    marker; the package registers it as an awaited child until it is reaped, so
    :func:`reap_orphans` never takes its status."""
    from axis_eval.execute.process import ProcessSpec, SpawnFailed, spawn

    if not argv:
        raise SpawnError("empty command", 127)
    spec = ProcessSpec(argv, cwd, env, None, stdin_pipe=stdin_pipe, new_session=False, stdio=stdio)
    try:
        return await spawn(spec)
    except SpawnFailed as exc:
        raise _spawn_error(exc, argv[0], cwd) from None


def _stdio_of(stdin: Any, stdout: Any, stderr: Any) -> tuple[Stdio, bool]:
    """``subprocess``-style stdio arguments as the package's options (what is supported:
    all inherited, or stdout piped with stderr piped or merged and stdin piped or null)."""
    if stdin is None and stdout is None and stderr is None:
        return "inherit", False
    if stdout == _PIPE and stderr in (_PIPE, _STDOUT) and stdin in (_PIPE, _DEVNULL):
        return ("pipes" if stderr == _PIPE else "merged"), stdin == _PIPE
    raise ValueError(f"unsupported stdio: stdin={stdin!r} stdout={stdout!r} stderr={stderr!r}")


async def start_process(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    stdin: Any = _PIPE,
    stdout: Any = _PIPE,
    stderr: Any = _PIPE,
) -> AgentProcess:
    """Start a process as the leader of its own group, safe from the orphan reaper.

    For other runner modules that must start processes (the guest services): the pid
    is registered so :func:`reap_orphans` never takes its exit status. Collect it with
    :func:`wait_process`; signal the group with :func:`signal_group`. ``stdin``, ``stdout``
    and ``stderr`` take ``asyncio.subprocess``'s constants: stdout ``PIPE``, stderr ``PIPE``
    or ``STDOUT``, stdin ``PIPE`` or ``DEVNULL`` (or all three None: the runner's own).

    Raises:
        SpawnError: it could not be started (``exit_code`` 126 or 127).
    """
    stdio, stdin_pipe = _stdio_of(stdin, stdout, stderr)
    return await _start(argv, cwd=cwd, env=env, stdio=stdio, stdin_pipe=stdin_pipe)


async def wait_process(proc: AgentProcess) -> int:
    """Wait for a process from :func:`start_process`; its return code (negative: signal)."""
    return await proc.wait()


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group; a group that is gone is ignored."""
    from axis_eval.execute.process import signal_group as send

    send(pgid, sig)


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
    proc = await _start(argv, cwd=cwd, env=env, stdio="merged")

    async def output() -> bytes:
        out = await proc.stdout.read()
        await proc.wait()
        return out

    try:
        out = await asyncio.wait_for(output(), timeout_s)
    except BaseException:
        proc.kill_now()  # SIGKILL at once: a helper gets no grace
        with contextlib.suppress(Exception):
            await proc.stop(0.0)
        raise
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
        self._proc: AgentProcess | None = None
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
        self._proc = await _start(self.argv, cwd=self.cwd, env=self.env, stdio="inherit")
        return self._proc.pid

    async def wait(self) -> CommandExit:
        """Wait for the command itself to exit."""
        assert self._proc is not None, "start() first"
        if self._exit is None:
            self._exit = _exit_of(self._proc.pid, await self._proc.wait())
        return self._exit

    async def stop(self, grace_s: float) -> CommandExit:
        """SIGTERM its group, SIGKILL whatever is left after ``grace_s``; its exit."""
        from axis_eval.execute.process import group_running

        proc = self._proc
        assert proc is not None, "start() first"
        grace = f"{grace_s:g}s"
        if not proc.exited or group_running(proc.pgid):
            event(log, logging.INFO, "stopping task command", pid=proc.pid, gracePeriod=grace)

        def killing() -> None:
            message = "task command did not exit within grace period; killing"
            event(log, logging.WARNING, message, pid=proc.pid, gracePeriod=grace)

        await proc.stop(grace_s, on_kill=killing)
        return await self.wait()


def reap_orphans() -> list[int]:
    """Reap zombie children no one else owns (adopted orphans); return their pids."""
    from axis_eval.execute.process import reap_orphans as reap

    return reap()


def become_subreaper() -> bool:
    """Adopt orphaned descendants like PID 1 does (``PR_SET_CHILD_SUBREAPER``)."""
    from axis_eval.execute.process import become_subreaper as become

    return become()


class OrphanReaper:
    """Reaps adopted orphans every ``interval_s``: axis_eval's reaper, on the shared state."""

    def __init__(self, interval_s: float = 0.25) -> None:
        from axis_eval.execute.process import OrphanReaper as Reaper

        self._reaper = Reaper(interval_s)

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
