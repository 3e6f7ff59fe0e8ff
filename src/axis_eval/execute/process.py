"""Agent processes: spawning, stopping whole process trees, reaping orphans, dying with us.

This module is the only place that starts agent processes or signals them (Linux only).

* Every agent runs in its own session and process group (``start_new_session``).
* Every process of a job carries ``AXIS_JOB_MARKER=<run_token>/<job_id>`` in its
  environment; :func:`spawn` sets it and descendants inherit it. Stopping a job signals its
  process group *and* every process on the machine with exactly that entry, so children that
  called ``setsid()`` or were orphaned by a double fork go too, and no other job is touched.
* :func:`become_subreaper` makes orphans reparent to us; :class:`OrphanReaper` reaps those
  that are not asyncio's own children.
* :class:`Sentinel` runs a watchdog that kills the run's marked processes when the harness
  goes away, even by SIGKILL.

Not covered: a process that clears its environment (``env -i``) *and* leaves the agent's
process group, or one we may not read ``/proc/<pid>/environ`` of.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass
from pathlib import Path

from axis_eval.execute import _procfs
from axis_eval.execute._procfs import MARKER_KEY

__all__ = [
    "MARKER_KEY",
    "AgentProcess",
    "OrphanReaper",
    "ProcessSpec",
    "Sentinel",
    "ShellResult",
    "SpawnFailed",
    "become_subreaper",
    "forget_marker",
    "kill_marked",
    "marked_pids",
    "new_run_token",
    "pidfd_child_watcher",
    "reap_orphans",
    "run_shell",
    "spawn",
]

STREAM_LIMIT = 64 * 1024 * 1024
"""Line limit of the stdout/stderr readers: long NDJSON lines must not break readline()."""
SHELL_OUTPUT_CAP = 1024 * 1024
"""run_shell keeps at most this many trailing bytes of each stream."""

_POLL_S = 0.05
_KILL_LIMIT_S = 5.0  # SIGKILL rounds give up after this (a process stuck in D state)
_PIPE_DRAIN_S = 1.0  # after the processes are gone, how long the pipes get to reach EOF
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37

_managed: dict[int, str | None] = {}
"""Pids whose exit status belongs to asyncio's child watcher, with the marker each was spawned
with (None: not known, e.g. the sentinel or an embedded ax-task-runner's children). Such a
pid is our unreaped child, so it cannot have been reused; a scan for one marker need not
read the environment of those spawned with another (see :func:`_others`)."""
_spawning = 0  # spawns in flight: their pid is not in _managed yet

# Markers whose last kill_marked() scan found nothing, with the number of spawns of that
# marker then and the process group the scan also covered. Every marked process descends
# from a spawn() of its marker, so until the next spawn none can appear and a job's final
# cleanup after its agent's stop() can skip a second /proc scan (one scan of ~0.3 ms per
# job). A scan that met a process exiting under it (it may have forked a child after the
# listing: a daemonizing double fork) proves nothing and is not remembered, so the next
# call scans again. Markers never passed to spawn() are always scanned.
_spawns: dict[str, int] = {}
_clean: dict[str, tuple[int, int | None]] = {}


@contextlib.contextmanager
def pidfd_child_watcher() -> Iterator[None]:
    """Within the block, asyncio learns of child exits through pidfds (on Python 3.11).

    3.11's default ``ThreadedChildWatcher`` starts a thread per child that blocks in
    ``waitpid()``; a pidfd in the event loop's selector does the same without a thread
    (−0.09 ms of CPU a job, and no thread beside the agents). 3.12 and later pick the pidfd
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
    policy.set_child_watcher(asyncio.PidfdChildWatcher())
    try:
        yield
    finally:
        policy.set_child_watcher(previous)


class SpawnFailed(Exception):
    """The agent could not be started (missing binary, no permission, bad directory)."""


def new_run_token() -> str:
    """A token unique to this axis run; job markers are ``<token>/<job_id>``."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def become_subreaper(enabled: bool = True) -> bool:
    """Make this process a child subreaper (or stop being one); True when prctl succeeded."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def ignore_existing_processes() -> None:
    """Call before a run's first job: later marker scans skip processes alive now."""
    _procfs.mark_preexisting()


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


def marked_pids(marker: str) -> list[int]:
    """Live (non-zombie) pids, other than ours, carrying exactly ``AXIS_JOB_MARKER=<marker>``."""
    return _procfs.find(_procfs.marker_entry(marker))


def reap_orphans() -> list[int]:
    """Reap zombie children that asyncio did not spawn (adopted orphans); return their pids."""
    return [] if _spawning else _procfs.reap_zombie_children(skip=_managed)


def _signal(pid: int, sig: int, *, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _others(marker: str) -> list[int]:
    """Our live agents spawned with another marker: a scan for ``marker`` skips them.

    Each carries its own job's marker (set by :func:`spawn`, inherited from nowhere else)
    and leads its own session, so it is neither marked ``marker`` nor in that job's group.
    """
    return [pid for pid, owner in _managed.items() if owner is not None and owner != marker]


def _in_group(pid: int, pgid: int) -> bool:
    info = _procfs.stat(pid)
    return info is not None and info[2] == pgid


def _kill_round(entry: bytes, pgid: int | None, skip: Container[int] = ()) -> bool:
    """SIGKILL the group and every marked process once; False when nothing was left."""
    pids = _procfs.find(entry, pgid=pgid, skip=skip)
    if pgid is not None and any(_in_group(pid, pgid) for pid in pids):
        _signal(pgid, signal.SIGKILL, group=True)  # atomic against forks inside the group
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    return bool(pids)


def _kill_now(marker: str, pgid: int | None) -> None:
    """Blocking SIGKILL sweep, for paths that cannot await (cancellation)."""
    entry = _procfs.marker_entry(marker)
    deadline = time.monotonic() + 1.0
    while _kill_round(entry, pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    reap_orphans()


async def kill_marked(marker: str, grace_s: float, *, pgid: int | None = None) -> None:
    """SIGTERM every process marked ``marker`` (and in group ``pgid``), then SIGKILL.

    Processes get up to ``grace_s`` seconds to exit after SIGTERM (new ones appearing in the
    meantime are sent SIGTERM too). The SIGKILL phase repeats until a scan finds nothing,
    since a process may fork while being killed. Zombie orphans are reaped along the way.
    """
    spawns = _spawns.get(marker, 0)
    known = _clean.get(marker)
    if known is not None and known[0] == spawns and (pgid is None or known[1] == pgid):
        reap_orphans()
        return
    entry = _procfs.marker_entry(marker)
    deadline = time.monotonic() + max(grace_s, 0.0)
    signalled: set[int] = set()
    skip = frozenset(_others(marker))
    pids = _procfs.find(entry, pgid=pgid, skip=skip)
    while pids:
        for pid in pids:
            if pid not in signalled:
                signalled.add(pid)
                _signal(pid, signal.SIGTERM)
                _signal(pid, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(_POLL_S)
        reap_orphans()
        pids = _procfs.find(entry, pgid=pgid, skip=_others(marker))
    kill_deadline = time.monotonic() + _KILL_LIMIT_S
    while pids and time.monotonic() < kill_deadline:
        if not _kill_round(entry, pgid, _others(marker)):
            pids = []
            break
        await asyncio.sleep(0.01)
        reap_orphans()
    reap_orphans()
    if not pids and spawns and _spawns.get(marker, 0) == spawns and _procfs.last_find_certain:
        _clean[marker] = (spawns, pgid)  # only markers spawn() sets: see _spawns


def forget_marker(marker: str) -> None:
    """Drop what :func:`kill_marked` remembers about ``marker`` (its job is over)."""
    _clean.pop(marker, None)
    _spawns.pop(marker, None)


@dataclass(frozen=True)
class ProcessSpec:
    """What to run. ``env`` is the child's whole environment; spawn adds the marker to it."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    marker: str
    """``<run_token>/<job_id>``."""
    stdin_data: bytes | None = None
    """Written to stdin, which is then closed; None means stdin is /dev/null."""
    stdin_pipe: bool = False
    """Keep stdin open as a pipe the caller writes to (:attr:`AgentProcess.stdin`), e.g. for
    JSON-RPC over stdio. Cannot be combined with ``stdin_data``."""


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Stream protocol that reports the process exit without waiting for the pipes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, marker: str | None) -> None:
        super().__init__(limit=STREAM_LIMIT, loop=loop)
        self.marker = marker
        self.exited = asyncio.Event()
        self.pipes_closed = asyncio.Event()
        self._open_pipes = {1, 2}
        self.pid = 0
        self.on_exit: list[Callable[[], object]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.pid = transport.get_pid()
        _managed[self.pid] = self.marker  # before the spawn returns: the reaper leaves it

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        self._open_pipes.discard(fd)
        if not self._open_pipes:
            self.pipes_closed.set()

    def process_exited(self) -> None:
        super().process_exited()
        _managed.pop(self.pid, None)  # asyncio has reaped it
        self.exited.set()
        for callback in self.on_exit:
            callback()


async def _exec(
    argv: list[str], *, cwd: str | None, env: dict[str, str], stdin: int, marker: str | None
) -> tuple[asyncio.SubprocessTransport, _Protocol]:
    """Start ``argv`` in a new session with piped stdout and stderr."""
    global _spawning
    loop = asyncio.get_running_loop()
    _spawning += 1  # until connection_made has put the pid into _managed
    try:
        return await loop.subprocess_exec(
            lambda: _Protocol(loop, marker),
            *argv,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    finally:
        _spawning -= 1


class AgentProcess:
    """A running agent: its own process group, its job marker, and its output streams.

    Read ``stdout``/``stderr`` yourself. :meth:`wait` returns when the agent itself exits,
    even if a descendant still holds its pipes; call :meth:`stop` when the job is over
    either way: it removes whatever the agent left behind.
    """

    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: _Protocol, marker: str
    ) -> None:
        assert protocol.stdout is not None and protocol.stderr is not None
        self.pid: int = transport.get_pid()
        self.pgid: int = self.pid  # start_new_session: the agent leads its group
        self.marker = marker
        self.stdout: asyncio.StreamReader = protocol.stdout
        self.stderr: asyncio.StreamReader = protocol.stderr
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

    async def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the group and marked processes, SIGKILL what is left after ``grace_s``.

        Idempotent and safe after the agent exited. On return no process with this job's
        marker is running, orphaned zombies are reaped and the output pipes are closed
        (after up to a second for the tail of the output to arrive). If the calling task is
        cancelled meanwhile, everything is SIGKILLed at once before the cancellation goes on.
        """
        async with self._lock:
            if self._stopped:
                return
            try:
                if self._feeder is not None:
                    self._feeder.cancel()
                await kill_marked(self.marker, grace_s, pgid=self.pgid)
                # Usually both have happened already: wait_for() would cost a task and a timer.
                if not self._protocol.exited.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._protocol.exited.wait(), _KILL_LIMIT_S)
                reap_orphans()
                if not self._protocol.pipes_closed.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._protocol.pipes_closed.wait(), _PIPE_DRAIN_S)
            except BaseException:
                _kill_now(self.marker, self.pgid)
                raise
            finally:
                self._close_pipes()
            self._stopped = True

    def _close_pipes(self) -> None:
        """Stop reading the output (readers see EOF); never kills a running agent."""
        if self.returncode is not None:
            self._transport.close()


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
        return SpawnFailed(f"command not found: {argv[0]}")
    if isinstance(exc, PermissionError):
        return SpawnFailed(f"permission denied: {argv[0]}")
    return SpawnFailed(f"cannot start {argv[0]}: {exc.strerror or exc}")


async def spawn(spec: ProcessSpec) -> AgentProcess:
    """Start an agent in its own process group with ``AXIS_JOB_MARKER`` set to its marker.

    Raises :class:`SpawnFailed` when the program cannot be started.
    """
    if not spec.argv:
        raise ValueError("argv is empty")
    if not spec.marker or "\0" in spec.marker:
        raise ValueError(f"bad job marker {spec.marker!r}")
    if spec.stdin_pipe and spec.stdin_data is not None:
        raise ValueError("stdin_pipe and stdin_data cannot be combined")
    env = {**spec.env, MARKER_KEY: spec.marker}
    _spawns[spec.marker] = _spawns.get(spec.marker, 0) + 1  # before the process exists
    piped = spec.stdin_data is not None or spec.stdin_pipe
    stdin = subprocess.PIPE if piped else subprocess.DEVNULL
    try:
        transport, protocol = await _exec(
            spec.argv, cwd=spec.cwd, env=env, stdin=stdin, marker=spec.marker
        )
    except OSError as exc:
        raise _spawn_error(exc, spec.argv, spec.cwd) from exc
    proc = AgentProcess(transport, protocol, spec.marker)
    if spec.stdin_pipe:
        proc.stdin = protocol.stdin
    if spec.stdin_data is not None and protocol.stdin is not None:
        proc._feeder = asyncio.get_running_loop().create_task(
            _feed(protocol.stdin, spec.stdin_data)
        )
    return proc


@dataclass(frozen=True)
class ShellResult:
    """Outcome of :func:`run_shell`; each stream holds at most its last 1 MiB."""

    exit_code: int | None
    """None when the command timed out."""
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: int


async def _tail(reader: asyncio.StreamReader, cap: int) -> bytes:
    buf = bytearray()
    while chunk := await reader.read(64 * 1024):
        buf += chunk
        if len(buf) > 2 * cap:
            del buf[:-cap]
    return bytes(buf[-cap:])


async def run_shell(
    command: str,
    *,
    cwd: str,
    env: dict[str, str],
    marker: str,
    timeout_s: float,
    grace_s: float = 5.0,
) -> ShellResult:
    """Run ``/bin/sh -c command`` in its own group with ``marker``, stdin from /dev/null.

    On timeout the group and every process with ``marker`` are stopped. When the shell exits
    in time, background processes it started are left alone (they carry the marker, so the
    job's cleanup gets them); their hold on the output pipes is dropped after a moment.
    """
    started = time.monotonic()
    proc = await spawn(ProcessSpec(["/bin/sh", "-c", command], cwd, env, marker))
    readers = [
        asyncio.ensure_future(_tail(r, SHELL_OUTPUT_CAP)) for r in (proc.stdout, proc.stderr)
    ]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
            await proc.stop(grace_s)
        remaining = timeout_s - (time.monotonic() - started)
        await asyncio.wait(readers, timeout=min(_PIPE_DRAIN_S, max(remaining, 0.1)))
        proc._close_pipes()
        out, err = await asyncio.gather(*readers)
    except BaseException:
        for reader in readers:
            reader.cancel()
        _kill_now(marker, proc.pgid)
        proc._close_pipes()
        raise
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        timed_out=timed_out,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


class OrphanReaper:
    """Periodically reaps zombie orphans adopted by this (subreaper) process.

    Only pids asyncio did not spawn are reaped, so asyncio keeps its own children's exit
    codes. Use as ``async with OrphanReaper():`` or call :meth:`start` and :meth:`stop`.
    Children started outside this module (e.g. ``subprocess`` in another thread) may have
    their exit status taken by the reaper; start them on the event loop thread or here.
    """

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
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
        reap_orphans()

    async def _run(self) -> None:
        while True:
            reap_orphans()
            await asyncio.sleep(self.interval_s)

    async def __aenter__(self) -> OrphanReaper:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


_SENTINEL_BOOT = """\
import sys, types
folder = sys.argv.pop(1)
for name, path in (("axis_eval", folder.rpartition("/")[0]), ("axis_eval.execute", folder)):
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
from axis_eval.execute._sentinel import main
sys.exit(main())
"""
"""Starts the watchdog in an isolated interpreter without site-packages (``-I -S``): stub
packages stand in for ``axis_eval`` and ``axis_eval.execute`` so only the two stdlib-only
modules load, and it is ready in about the time of a bare ``python -c pass``."""


class Sentinel:
    """Watchdog process that SIGKILLs this run's agents when the harness dies.

    ``sentinel = await Sentinel.start(run_token)`` before spawning agents; ``await
    sentinel.close()`` on a normal exit (the sentinel then sweeps leftovers and exits).
    """

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self.pid = transport.get_pid()
        self._transport = transport
        self._protocol = protocol
        self._closed = False

    @classmethod
    async def start(cls, run_token: str, *, timeout_s: float = 10.0) -> Sentinel:
        """Start the watchdog for ``run_token`` and wait until it is listening."""
        package = Path(__file__).resolve().parent
        argv = [sys.executable, "-I", "-S", "-c", _SENTINEL_BOOT, str(package), run_token]
        try:
            transport, protocol = await _exec(
                argv, cwd=None, env=dict(os.environ), stdin=subprocess.PIPE, marker=None
            )
        except OSError as exc:
            raise SpawnFailed(f"cannot start the sentinel: {exc}") from exc
        sentinel = cls(transport, protocol)
        assert protocol.stdout is not None
        try:
            line = await asyncio.wait_for(protocol.stdout.readline(), timeout_s)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            await sentinel.close(timeout_s=1.0)
            err = b""
            if protocol.stderr is not None and sentinel._transport.is_closing():
                err = await protocol.stderr.read(4096)
            raise SpawnFailed(f"the sentinel did not start: {err.decode(errors='replace')}")
        return sentinel

    async def close(self, timeout_s: float = 5.0) -> None:
        """Close its pipe (it kills any leftover marked process) and wait for it to exit."""
        if self._closed:
            return
        self._closed = True
        if self._protocol.stdin is not None:
            self._protocol.stdin.close()
        try:
            await asyncio.wait_for(self._protocol.exited.wait(), timeout_s)
        except TimeoutError:
            _signal(self.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._protocol.exited.wait(), 1.0)
        if self._transport.get_returncode() is not None:
            self._transport.close()
