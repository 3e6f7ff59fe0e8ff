"""Processes started through the guest ProcessService: spawn, spool output, stdin, signals."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import logging
import os
import secrets
import signal
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ax_task_runner import supervisor
from ax_task_runner._guest.errors import ErrorKind, ProcessError
from ax_task_runner.logs import event

if TYPE_CHECKING:
    from axis_eval.execute.process import AgentProcess

_log = logging.getLogger("ax_task_runner.guest")

STDOUT, STDERR = 0, 1
CHUNK = 64 * 1024


@dataclass
class OutputSpool:
    """stdout and stderr chunks in arrival order, with per-stream byte offsets.

    At most `retain` bytes are kept; older chunks are dropped first (a reader asking for
    them gets what is left). Readers follow with `changed`, replaced on every append.
    """

    retain: int = 32 * 1024 * 1024
    chunks: deque[tuple[int, int, int, bytes]] = field(default_factory=deque)  # seq, src, off, data
    totals: list[int] = field(default_factory=lambda: [0, 0])
    kept: int = 0
    next_seq: int = 0
    closed: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def append(self, source: int, data: bytes) -> None:
        self.chunks.append((self.next_seq, source, self.totals[source], data))
        self.next_seq += 1
        self.totals[source] += len(data)
        self.kept += len(data)
        while self.kept > self.retain and len(self.chunks) > 1:
            self.kept -= len(self.chunks.popleft()[3])
        self._notify()

    def close(self) -> None:
        self.closed = True
        self._notify()

    def _notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def read_from(self, seq: int, offsets: list[int]) -> tuple[list[tuple[int, bytes]], int]:
        """Chunks at or after seq, trimmed to offsets (updated in place); and the next seq."""
        out: list[tuple[int, bytes]] = []
        chunks: Iterable[tuple[int, int, int, bytes]] = self.chunks
        if self.chunks and seq > self.chunks[0][0]:
            # A follower wants the few newest chunks: walk back to them, not through all
            # that is kept (up to 32 MiB of small chunks, on every append).
            chunks = reversed(
                list(itertools.takewhile(lambda c: c[0] >= seq, reversed(self.chunks)))
            )
        for cseq, source, start, data in chunks:
            if cseq < seq:
                continue
            end = start + len(data)
            if end > offsets[source]:
                skip = max(0, offsets[source] - start)
                out.append((source, data[skip:]))
                offsets[source] = end
        return out, self.next_seq


@dataclass
class GuestProcess:
    process_id: str
    command: list[str]
    proc: AgentProcess
    started_at: float
    stdin_enabled: bool
    spool: OutputSpool
    finished_at: float | None = None
    exit_code: int | None = None
    stdin_closed: bool = False
    reaped: bool = False
    stdin_written: int = 0
    stdin_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    @property
    def running(self) -> bool:
        return self.exit_code is None


def _kill_at_exit(ref: weakref.ref[ProcessTable]) -> None:
    table = ref()
    if table is not None:
        for gp in table._procs.values():
            ProcessTable._signal_group(gp, signal.SIGKILL)


def _exit_status(returncode: int) -> int:
    # The proto's convention: the exit code, or 128 + the signal that ended the process.
    return 128 - returncode if returncode < 0 else returncode


class ProcessTable:
    """All processes started through the guest services of one runner."""

    def __init__(
        self,
        *,
        workspace: Path,
        env: Mapping[str, str] | None = None,
        retain_finished: int = 256,
        output_retain_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self.workspace = workspace
        self._env = env
        self._retain_finished = retain_finished
        self._output_retain = output_retain_bytes
        self._procs: dict[str, GuestProcess] = {}
        self._counter = itertools.count(1)
        self._prefix = secrets.token_hex(3)
        # A safety net for runners that exit without aclose(): no guest process outlives
        # the interpreter (as PID 1 in a container the kernel would end them anyway).
        atexit.register(_kill_at_exit, weakref.ref(self))

    def pids(self) -> set[int]:
        """OS pids of guest processes not yet reaped (for a PID-1 reaper to leave alone)."""
        return {p.pid for p in self._procs.values() if p.running}

    def get(self, process_id: str) -> GuestProcess:
        proc = self._procs.get(process_id)
        if proc is None:
            raise ProcessError("not_found", f"process {process_id!r} not found")
        return proc

    async def start(
        self,
        command: Sequence[str],
        *,
        cwd: str = "",
        env: Mapping[str, str] | None = None,
        stdin: bool = False,
        timeout: float = 0.0,
    ) -> GuestProcess:
        argv = list(command)
        if not argv or not argv[0]:
            raise ProcessError("invalid", "command must not be empty")
        workdir = Path(cwd) if cwd else self.workspace
        if not workdir.is_absolute():
            workdir = self.workspace / workdir
        if not workdir.is_dir():
            raise ProcessError("precondition", f"working directory {str(workdir)!r} does not exist")
        merged = dict(os.environ if self._env is None else self._env)
        merged.update(env or {})
        try:
            # Through the supervisor: its own process group, and registered so that the
            # PID-1 orphan reaper leaves this child's exit status to asyncio.
            proc = await supervisor.start_process(
                argv,
                cwd=str(workdir),
                env=merged,
                stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except supervisor.SpawnError as exc:
            kind: ErrorKind = "not_found" if exc.exit_code == 127 else "precondition"
            raise ProcessError(kind, str(exc)) from exc
        process_id = f"p-{self._prefix}-{next(self._counter)}"
        gp = GuestProcess(
            process_id=process_id,
            command=argv,
            proc=proc,
            started_at=time.time(),
            stdin_enabled=stdin,
            spool=OutputSpool(retain=self._output_retain),
        )
        self._procs[process_id] = gp
        # The command line can carry secrets: log the program only.
        event(
            _log,
            logging.INFO,
            "guest process started",
            id=process_id,
            pid=proc.pid,
            program=argv[0],
        )
        loop = asyncio.get_running_loop()
        gp.tasks.append(loop.create_task(self._supervise(gp, timeout)))
        self._trim()
        return gp

    async def _pump(self, gp: GuestProcess, source: int, pipe: asyncio.StreamReader | None) -> None:
        if pipe is None:
            return
        while True:
            data = await pipe.read(CHUNK)
            if not data:
                return
            gp.spool.append(source, data)

    async def _supervise(self, gp: GuestProcess, timeout: float) -> None:
        pumps = asyncio.gather(
            self._pump(gp, STDOUT, gp.proc.stdout), self._pump(gp, STDERR, gp.proc.stderr)
        )
        killer: asyncio.TimerHandle | None = None
        if timeout > 0:
            killer = asyncio.get_running_loop().call_later(
                timeout, self._signal_group, gp, signal.SIGKILL
            )
        try:
            returncode = await supervisor.wait_process(gp.proc)
            gp.reaped = True
            # Descendants may still hold the pipes open; give them a moment, not forever.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(pumps), timeout=2.0)
        finally:
            if killer is not None:
                killer.cancel()
            if not pumps.done():
                pumps.cancel()
                with contextlib.suppress(BaseException):
                    await pumps
        gp.exit_code = _exit_status(returncode)
        gp.finished_at = time.time()
        gp.stdin_closed = True
        if gp.proc.stdin is not None:
            with contextlib.suppress(Exception):
                gp.proc.stdin.close()
        gp.spool.close()
        gp.done.set()
        event(_log, logging.INFO, "guest process exited", id=gp.process_id, exitCode=gp.exit_code)

    def _trim(self) -> None:
        finished = [p for p in self._procs.values() if not p.running]
        for old in finished[: max(0, len(finished) - self._retain_finished)]:
            self._procs.pop(old.process_id, None)

    @staticmethod
    def _signal_group(gp: GuestProcess, signum: int) -> None:
        # Only before the leader is reaped: afterwards its pid (= pgid) may be reused.
        if not gp.reaped:
            supervisor.signal_group(gp.pid, signum)

    def signal(self, process_id: str, signum: int) -> GuestProcess:
        gp = self.get(process_id)
        if signum <= 0 or signum >= signal.NSIG:
            raise ProcessError("invalid", f"unsupported signal {signum}")
        if not gp.running:
            # As upstream (FAILED_PRECONDITION). Between the reap and the exit status (the
            # output still draining) it still reads RUNNING, and _signal_group is a no-op.
            raise ProcessError("precondition", f"process {process_id!r} has exited")
        self._signal_group(gp, signum)
        return gp

    async def write_input(self, gp: GuestProcess, data: bytes, close: bool) -> int:
        if not gp.stdin_enabled:
            raise ProcessError("precondition", "the process was started without stdin")
        async with gp.stdin_lock:
            if gp.stdin_closed or gp.proc.stdin is None:
                if data:
                    raise ProcessError("precondition", "stdin of the process is closed")
                return 0
            written = 0
            if data:
                try:
                    gp.proc.stdin.write(data)
                    await gp.proc.stdin.drain()
                    written = len(data)
                except (BrokenPipeError, ConnectionResetError) as exc:
                    gp.stdin_closed = True
                    raise ProcessError("precondition", "the process closed its stdin") from exc
            if close:
                gp.stdin_closed = True
                gp.proc.stdin.close()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    await gp.proc.stdin.wait_closed()
            gp.stdin_written += written
            return written

    async def output(
        self, gp: GuestProcess, *, stdout_offset: int, stderr_offset: int, follow: bool
    ) -> AsyncIterator[tuple[int, bytes] | None]:
        """Yield (source, data) chunks, then None once the process has exited."""
        offsets = [max(0, stdout_offset), max(0, stderr_offset)]
        seq = 0
        while True:
            changed = gp.spool.changed
            closed = gp.spool.closed
            chunks, seq = gp.spool.read_from(seq, offsets)
            for source, data in chunks:
                for i in range(0, len(data), CHUNK):
                    yield source, data[i : i + CHUNK]
            if closed:
                await gp.done.wait()
                yield None
                return
            if not follow:
                return
            await changed.wait()

    async def aclose(self, grace: float = 2.0) -> None:
        """Stop every running guest process: SIGTERM to the group, then SIGKILL."""
        running = [p for p in self._procs.values() if p.running]
        for gp in running:
            self._signal_group(gp, signal.SIGTERM)
        if running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(p.done.wait() for p in running)), timeout=grace
                )
        for gp in running:
            self._signal_group(gp, signal.SIGKILL)
        for gp in running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(gp.done.wait(), timeout=grace)
