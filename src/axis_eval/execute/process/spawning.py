"""Spawning: an argv with its env, cwd and stdin, in its own session and process group.

The only module of the package that starts processes (and so imports ``subprocess``). Every
agent runs in its own session and process group (``start_new_session``) with the job marker
in its environment (:mod:`.markers`); :meth:`AgentProcess.stop` ends its whole tree.

A task runner's processes differ in three options of :class:`ProcessSpec`, each defaulting to
the agent's way: no job marker (its tree is its process group; the task's environment stays
exactly as specified), a new group in the caller's session (``new_session=False``), and the
caller's stdio or stderr merged into stdout (``stdio``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from axis_eval.execute.process import activity, children, fds, markers
from axis_eval.execute.process.kill import (
    KILL_LIMIT_S,
    kill_group,
    kill_marked,
    kill_marked_now,
    signal_group,
)
from axis_eval.execute.process.markers import MARKER_KEY
from axis_eval.execute.process.reaping import reap_orphans

__all__ = [
    "STREAM_LIMIT",
    "AgentProcess",
    "ChildProtocol",
    "ManagedProcess",
    "ProcessSpec",
    "SpawnFailed",
    "Spawner",
    "Stdio",
    "exec_in_session",
    "spawn",
]

STREAM_LIMIT = 1024 * 1024
"""Buffer limit of the stdout/stderr readers: past twice this, asyncio stops reading the pipe
until the reader catches up, so a flooding child waits on its write instead of filling the
harness's memory. (An agent's reader reads through the supervisor's own stream, with its own
line limit: ``axis_eval.adapters.supervision.MAX_LINE_BYTES``.)"""
PIPE_DRAIN_S = 1.0
"""After the processes are gone, how long the pipes get to reach EOF."""


class SpawnFailed(Exception):
    """The agent could not be started (missing binary, no permission, bad directory).

    Raised from the :class:`OSError` (its ``__cause__``); ``exit_code`` is the shell's code
    for the failure: 127 when the program was not found, 126 otherwise.
    """

    def __init__(self, message: str, exit_code: int = 126) -> None:
        super().__init__(message)
        self.exit_code = exit_code


Stdio = Literal["pipes", "merged", "inherit"]
"""``pipes``: stdout and stderr each to a pipe; ``merged``: stderr into the stdout pipe;
``inherit``: stdin, stdout and stderr are the caller's. A stream not piped reads as empty."""


@dataclass(frozen=True)
class ProcessSpec:
    """What to run. ``env`` is the child's whole environment; spawn adds the marker to it."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    marker: str | None
    """``<run_token>/<job_id>``. None: no marker is set, and the process's tree is its
    process group alone (what :meth:`AgentProcess.stop` ends)."""
    stdin_data: bytes | None = None
    """Written to stdin, which is then closed; None means stdin is /dev/null."""
    stdin_pipe: bool = False
    """Keep stdin open as a pipe the caller writes to (:attr:`AgentProcess.stdin`), e.g. for
    JSON-RPC over stdio. Cannot be combined with ``stdin_data``."""
    new_session: bool = True
    """False: lead a new process group in the caller's session instead of a new session
    (a task runner's command stays in the runner's session, as upstream starts it)."""
    stdio: Stdio = "pipes"
    """Where the output goes (see :data:`Stdio`); ``inherit`` excludes both stdin options."""


class ChildProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Stream protocol that reports the process exit without waiting for the pipes, and
    keeps the child registered in :mod:`.children` until asyncio has reaped it."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, marker: str | None, stdio: Stdio = "pipes"
    ) -> None:
        super().__init__(limit=STREAM_LIMIT, loop=loop)
        self.marker = marker
        self.exited = asyncio.Event()
        self.pipes_closed = asyncio.Event()
        self._open_pipes = {"pipes": {1, 2}, "merged": {1}, "inherit": set()}[stdio]
        if not self._open_pipes:
            self.pipes_closed.set()
        self.pid = 0
        self.transport: asyncio.SubprocessTransport | None = None
        self.on_exit: list[Callable[[], object]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport
        self.pid = transport.get_pid()
        children.own(self.pid, self.marker)  # before the spawn returns: the reaper leaves it

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        self._open_pipes.discard(fd)
        if not self._open_pipes:
            self.pipes_closed.set()

    def process_exited(self) -> None:
        super().process_exited()
        children.release(self.pid)  # asyncio has reaped it
        self.exited.set()
        for callback in self.on_exit:
            callback()


async def exec_in_session(
    argv: list[str],
    *,
    cwd: str | None,
    env: dict[str, str],
    stdin_pipe: bool,
    marker: str | None,
    new_session: bool = True,
    stdio: Stdio = "pipes",
) -> tuple[asyncio.SubprocessTransport, ChildProtocol]:
    """Start ``argv`` in a new session (or only a new process group) with piped stdout and
    stderr (stdin: a pipe, or /dev/null), or with the ``stdio`` asked for. Raises
    :class:`OSError` when it cannot be started."""
    loop = asyncio.get_running_loop()
    inherit = stdio == "inherit"
    stdin = None if inherit else subprocess.PIPE if stdin_pipe else fds.devnull()
    stderr = {"pipes": subprocess.PIPE, "merged": subprocess.STDOUT, "inherit": None}[stdio]
    made: list[ChildProtocol] = []

    def protocol() -> ChildProtocol:
        made.append(ChildProtocol(loop, marker, stdio))
        return made[-1]

    with children.spawning():  # until connection_made has registered the pid
        try:
            return await loop.subprocess_exec(
                protocol,
                *argv,
                stdin=stdin,
                stdout=None if inherit else subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env=env,
                start_new_session=new_session,
                process_group=None if new_session else 0,
            )
        except OSError as exc:
            if fds.exhausted(exc) and made and await _started_anyway(made[0]):
                raise _StartedUnwatched(exc.errno, exc.strerror) from exc
            raise


class _StartedUnwatched(OSError):
    """The child was started, then asyncio could not watch it (no descriptor left for its
    pidfd, with asyncio's own watcher): it has been killed and reaped. Never retried: it
    may have run a moment."""


async def _started_anyway(protocol: ChildProtocol) -> bool:
    """After a failed ``subprocess_exec``: whether the child was started all the same (only
    then does asyncio connect its pipes, a few loop turns later). Such a child is killed
    and reaped here, since no one else will wait for it."""
    for _ in range(20):
        if protocol.transport is not None:
            break
        await asyncio.sleep(0)
    transport = protocol.transport
    if transport is None:
        return False
    signal_group(protocol.pid, signal.SIGKILL)  # it leads its group
    popen = transport.get_extra_info("subprocess")
    for _ in range(100):
        if popen is None or popen.poll() is not None:  # poll() reaps that pid only
            break
        await asyncio.sleep(0.01)
    transport.close()
    children.release(protocol.pid)
    return True


def _empty_reader() -> asyncio.StreamReader:
    reader = asyncio.StreamReader()
    reader.feed_eof()
    return reader


class ManagedProcess(Protocol):
    """The seam's handle: what a spawner (this package's :func:`spawn`, or a sandbox that
    wraps it) returns. :class:`AgentProcess` is the local implementation.

    Exactly what the supervisor (:mod:`axis_eval.execute.supervise`) uses, so a backend
    implements no more; each member means what it means on :class:`AgentProcess` (``stdin``
    is an open pipe only with ``stdin_pipe=True``; ``stop`` ends the whole tree, idempotent).
    """

    @property
    def stdout(self) -> asyncio.StreamReader: ...
    @property
    def stderr(self) -> asyncio.StreamReader: ...
    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...
    @property
    def returncode(self) -> int | None: ...
    @property
    def exited(self) -> bool: ...
    def add_exit_callback(self, callback: Callable[[], object]) -> None: ...
    async def wait(self) -> int: ...
    async def stop(self, grace_s: float = 5.0) -> None: ...
    def kill_now(self) -> None:
        """SIGKILL at once, without waiting (paths that cannot await); ``stop`` still due."""
        ...

    def close_pipes(self) -> None:
        """Stop reading the output of an exited process (readers see EOF); never signals."""
        ...


class AgentProcess:
    """A running agent: its own process group, its job marker, and its output streams.

    Read ``stdout``/``stderr`` yourself. :meth:`wait` returns when the agent itself exits,
    even if a descendant still holds its pipes; call :meth:`stop` when the job is over
    either way (or use the object as ``async with``): it removes whatever the agent left
    behind.
    """

    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: ChildProtocol, marker: str | None
    ) -> None:
        self.pid: int = transport.get_pid()
        self.pgid: int = self.pid  # a new session or group: the agent leads its group
        self.marker = marker
        self.stdout: asyncio.StreamReader = protocol.stdout or _empty_reader()
        self.stderr: asyncio.StreamReader = protocol.stderr or _empty_reader()
        self.stdin: asyncio.StreamWriter | None = None
        """The agent's stdin when spawned with ``stdin_pipe=True``; close it to send EOF."""
        self._transport = transport
        self._protocol = protocol
        self._feeder: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._stopped = False

    @property
    def returncode(self) -> int | None:
        """Exit code; a negative signal number when a signal killed it; None while running."""
        return self._transport.get_returncode()

    @property
    def exited(self) -> bool:
        """Whether the agent process itself has exited (and been reaped)."""
        return self._protocol.exited.is_set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has finished: nothing of the job is left running."""
        return self._stopped

    def add_exit_callback(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` on the event loop when the agent exits (soon, if it has).

        Cheaper than a task waiting in :meth:`wait` for a caller that also waits on
        other things (a time limit, a cancel).
        """
        if self.exited:
            asyncio.get_running_loop().call_soon(callback)
        else:
            self._protocol.on_exit.append(callback)

    async def wait(self) -> int:
        """Wait for the agent process itself to exit and return its :attr:`returncode`."""
        await self._protocol.exited.wait()
        code = self.returncode
        assert code is not None
        return code

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the agent's process group (while the agent has not been reaped:
        afterwards its pgid may name someone else's group)."""
        if not self.exited:
            signal_group(self.pgid, sig)

    async def stop(
        self, grace_s: float = 5.0, *, on_kill: Callable[[], object] | None = None
    ) -> None:
        """SIGTERM the group and marked processes, SIGKILL what is left after ``grace_s``.

        Idempotent and safe after the agent exited. On return no process with this job's
        marker (or, spawned without one, in its group) is running, orphaned zombies are
        reaped and the output pipes are closed (after up to a second for the tail of the
        output to arrive). ``on_kill()`` is called before the SIGKILL, if one is needed. If
        the calling task is cancelled meanwhile, everything is SIGKILLed at once before the
        cancellation goes on.
        """
        async with self._lock:
            if self._stopped:
                return
            try:
                if self._feeder is not None:
                    self._feeder.cancel()
                if self.marker is None:
                    await kill_group(self.pgid, grace_s, on_kill=on_kill)
                else:
                    await kill_marked(self.marker, grace_s, pgid=self.pgid, on_kill=on_kill)
                # Usually both have happened already: wait_for() would cost a task and a timer.
                if not self._protocol.exited.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._protocol.exited.wait(), KILL_LIMIT_S)
                reap_orphans()
                if not self._protocol.pipes_closed.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._protocol.pipes_closed.wait(), PIPE_DRAIN_S)
            except BaseException:
                self.kill_now()
                raise
            finally:
                self.close_pipes()
            self._stopped = True

    def kill_now(self) -> None:
        """SIGKILL the group and every marked process at once, blocking (for paths that
        cannot await, such as a cancellation); :meth:`stop` is still due afterwards."""
        kill_marked_now(self.marker, self.pgid)

    async def drain(self, timeout_s: float = PIPE_DRAIN_S) -> None:
        """Wait up to ``timeout_s`` for stdout and stderr to reach EOF (every holder of the
        pipes gone), then :meth:`close_pipes`."""
        if not self._protocol.pipes_closed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._protocol.pipes_closed.wait(), timeout_s)
        self.close_pipes()

    def close_pipes(self) -> None:
        """Stop reading the output (readers see EOF) once the agent has exited; never kills
        a running agent."""
        if self.returncode is not None:
            self._transport.close()

    async def __aenter__(self) -> AgentProcess:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


Spawner = Callable[[ProcessSpec], Awaitable[ManagedProcess]]
"""Starts a :class:`ProcessSpec`: :func:`spawn` here; a sandbox backend provides its own
(``RunControl.spawner``, ``JobContext.spawner``). It raises :class:`SpawnFailed` when the
program cannot start."""


async def _feed(writer: asyncio.StreamWriter, data: bytes) -> None:
    try:
        writer.write(data)
        await writer.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        writer.close()


def _spawn_error(exc: OSError, argv: list[str], cwd: str) -> SpawnFailed:
    if exc.filename is not None and os.fsdecode(exc.filename) == cwd:
        return SpawnFailed(f"cannot use working directory {cwd}: {exc.strerror}")
    if isinstance(exc, FileNotFoundError):
        return SpawnFailed(f"command not found: {argv[0]}", 127)
    if isinstance(exc, PermissionError):
        return SpawnFailed(f"permission denied: {argv[0]}")
    return SpawnFailed(f"cannot start {argv[0]}: {exc.strerror or exc}")


async def _start(
    spec: ProcessSpec, env: dict[str, str], piped: bool
) -> tuple[asyncio.SubprocessTransport, ChildProtocol]:
    """:func:`exec_in_session`, waiting out a lack of descriptors (EMFILE, ENFILE) for up to
    :data:`~.fds.EXHAUSTED_WAIT_S`: running jobs free theirs as they end."""
    deadline = time.monotonic() + fds.EXHAUSTED_WAIT_S
    pause = 0.01
    while True:
        try:
            return await exec_in_session(
                spec.argv,
                cwd=spec.cwd,
                env=env,
                stdin_pipe=piped,
                marker=spec.marker,
                new_session=spec.new_session,
                stdio=spec.stdio,
            )
        except OSError as exc:
            unwatched = isinstance(exc, _StartedUnwatched)
            if unwatched or not fds.exhausted(exc) or time.monotonic() >= deadline:
                raise _spawn_error(exc, spec.argv, spec.cwd) from exc
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.5)


async def spawn(spec: ProcessSpec) -> AgentProcess:
    """Start an agent in its own process group with ``AXIS_JOB_MARKER`` set to its marker.

    Raises :class:`SpawnFailed` when the program cannot be started. When this process has
    no descriptor left (EMFILE), the spawn waits for running jobs to free some.
    """
    if not spec.argv:
        raise ValueError("argv is empty")
    if spec.marker is not None and (not spec.marker or "\0" in spec.marker):
        raise ValueError(f"bad job marker {spec.marker!r}")
    if spec.stdin_pipe and spec.stdin_data is not None:
        raise ValueError("stdin_pipe and stdin_data cannot be combined")
    piped = spec.stdin_data is not None or spec.stdin_pipe
    if piped and spec.stdio == "inherit":
        raise ValueError("an inherited stdin cannot be fed or piped")
    env = dict(spec.env)
    began = False
    if spec.marker is not None:
        env[MARKER_KEY] = spec.marker
        began = spec.marker not in activity.live()
        markers.count_spawn(spec.marker)  # before the process exists
    try:
        transport, protocol = await _start(spec, env, piped)
    except BaseException:
        if began and spec.marker is not None:
            activity.end(spec.marker)  # nothing was started: it can own no orphan
        raise
    proc = AgentProcess(transport, protocol, spec.marker)
    if spec.stdin_pipe:
        proc.stdin = protocol.stdin
    if spec.stdin_data is not None and protocol.stdin is not None:
        proc._feeder = asyncio.get_running_loop().create_task(
            _feed(protocol.stdin, spec.stdin_data)
        )
    return proc
