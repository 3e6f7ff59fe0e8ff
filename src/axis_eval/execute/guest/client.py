"""GuestClient: the guest services of a runner (``ateenv.v1alpha``), as coroutines.

One client is one HTTP/2 connection (h2c over a Unix socket or TCP) to a runner that serves
ProcessService and FileSystemService: ``ax-task-runner`` with ``spec.debug: true``, in a
container, a pod or on this host. grpclib (and protobuf) load on :meth:`GuestClient.connect`,
not on import.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import weakref
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING

from axis_eval.execute.guest.models import GuestError, OutputChunk, ProcessState
from axis_eval.execute.process import ProcessSpec, SpawnFailed

if TYPE_CHECKING:
    from axis_eval.execute.guest._rpc import Rpc
    from axis_eval.execute.guest.remote import RemoteProcess
    from axis_eval.execute.process import Spawner

__all__ = ["CALL_TIMEOUT_S", "READ_FILE_LIMIT", "GuestClient"]

CALL_TIMEOUT_S = 30.0
"""Deadline of each unary call (start, get, signal); streams have none."""
READ_FILE_LIMIT = 256 * 1024 * 1024
"""What :meth:`GuestClient.read_file` takes at most by default."""
_PROBE_ID = "axis-probe"  # GetProcess of an id the runner never gives: NOT_FOUND when up


def _file_error(exc: GuestError, path: str) -> Exception:
    if exc.code == "NOT_FOUND":
        return FileNotFoundError(errno.ENOENT, exc.message, path)
    if exc.code == "PERMISSION_DENIED":
        return PermissionError(errno.EACCES, exc.message, path)
    return exc


def _spawn_error(exc: GuestError, spec: ProcessSpec) -> SpawnFailed:
    """As :func:`~axis_eval.execute.process.spawn` words a failed start (the runner
    answers NOT_FOUND for a missing program, FAILED_PRECONDITION for a missing working
    directory or a program it cannot run)."""
    if exc.code == "NOT_FOUND":
        return SpawnFailed(f"command not found: {spec.argv[0]}", 127)
    if exc.code == "FAILED_PRECONDITION":
        return SpawnFailed(exc.message)
    return SpawnFailed(f"cannot start {spec.argv[0]} in the guest: {exc}")


class GuestClient:
    """The guest services of one runner. Make one with :meth:`connect`; close it (or use
    ``async with``) when done.

    ``spawn`` is a :data:`~axis_eval.execute.process.Spawner`: give it where a sandbox
    backend starts its processes. Its ``env`` becomes the process's whole environment
    when the runner adds nothing of its own (``ax-task-runner --guest-env empty``); for a
    runner that starts processes with its own environment plus the request's (upstream's
    guest daemon, ``ax-task-runner`` by default), connect with ``clear_env=True``, which
    starts ``env -i -- K=V... argv`` instead (a missing program then shows as exit code
    127 of the process, not as :class:`~axis_eval.execute.process.SpawnFailed`).
    """

    def __init__(self, rpc: Rpc, *, clear_env: bool = False) -> None:
        self._rpc = rpc
        self._clear_env = clear_env
        self._processes: weakref.WeakSet[RemoteProcess] = weakref.WeakSet()

    @property
    def endpoint(self) -> str:
        """``unix:<path>`` or ``host:port``."""
        return str(self._rpc.endpoint)

    @classmethod
    async def connect(
        cls,
        *,
        unix_socket: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        timeout_s: float = 10.0,
        call_timeout_s: float = CALL_TIMEOUT_S,
        clear_env: bool = False,
    ) -> GuestClient:
        """Connect, retrying until the runner answers (it may still be starting).

        Raises:
            GuestError: ``UNAVAILABLE`` when nothing answered within ``timeout_s``;
                ``UNIMPLEMENTED`` when the runner serves without guest services (its Task
                lacks ``spec.debug: true``).
            ValueError: neither (or both) of ``unix_socket`` and ``port`` given.
        """
        if (unix_socket is None) == (port is None):
            raise ValueError("give either unix_socket or port")
        from axis_eval.execute.guest._rpc import Endpoint, Rpc

        rpc = Rpc(Endpoint(unix_socket, host, port), call_timeout_s=call_timeout_s)
        client = cls(rpc, clear_env=clear_env)
        try:
            await client._wait_up(timeout_s)
        except BaseException:
            await client.close()
            raise
        return client

    async def _wait_up(self, timeout_s: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        pause = 0.005
        last = "no answer"
        while True:
            left = deadline - loop.time()
            try:
                await asyncio.wait_for(self._rpc.get_process(_PROBE_ID), max(min(left, 2.0), 0.05))
                return
            except GuestError as exc:
                if exc.code in ("NOT_FOUND", "INVALID_ARGUMENT"):
                    return  # serving: it looked the id up
                if exc.code == "UNIMPLEMENTED":
                    raise
                last = exc.message
            except TimeoutError:
                last = "no answer"
            if loop.time() + pause >= deadline:
                raise GuestError(
                    "UNAVAILABLE",
                    f"no guest services at {self.endpoint} within {timeout_s:g}s: {last}",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.2)

    async def close(self) -> None:
        """Close the connection and those of the processes spawned (their readers get EOF).
        Guest processes still running are left to the runner (its own end stops them)."""
        for proc in list(self._processes):
            proc.close_pipes()
        self._rpc.close()

    async def __aenter__(self) -> GuestClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- ProcessService

    async def start_process(
        self,
        argv: list[str],
        *,
        cwd: str = "",
        env: Mapping[str, str] | None = None,
        stdin: bool = False,
        timeout_s: float = 0,
    ) -> ProcessState:
        """Start ``argv`` (no shell) in ``cwd`` (empty: the runner's workspace) with
        ``env`` added to the runner's base environment; ``stdin`` opens a pipe for
        :meth:`write_input`; ``timeout_s`` > 0 has the runner SIGKILL its group then."""
        return await self._rpc.start_process(
            list(argv), cwd, dict(env or {}), stdin, max(0.0, timeout_s)
        )

    def stream_output(
        self,
        process_id: str,
        *,
        follow: bool = True,
        stdout_offset: int = 0,
        stderr_offset: int = 0,
    ) -> AsyncGenerator[OutputChunk, None]:
        """The output from the offsets on, in arrival order; with ``follow`` until the
        exit, whose chunk (``exit`` set) is the last. Close the iterator when leaving it
        early (``contextlib.aclosing``)."""
        return self._rpc.output(
            process_id, follow=follow, stdout_offset=stdout_offset, stderr_offset=stderr_offset
        )

    async def write_input(self, process_id: str, data: bytes = b"", *, close: bool = False) -> int:
        """Write to the stdin of a process started with ``stdin=True`` (waits while it
        does not read); ``close`` closes its stdin after the data. The bytes written."""
        return await self._rpc.write_input(process_id, data, close)

    async def signal(self, process_id: str, sig: int) -> ProcessState | None:
        """Send ``sig`` to the process's group; None when it had already exited."""
        try:
            return await self._rpc.signal(process_id, sig)
        except GuestError as exc:
            if exc.code == "FAILED_PRECONDITION":
                return None
            raise

    async def get_process(self, process_id: str) -> ProcessState:
        """The process as the runner sees it now."""
        return await self._rpc.get_process(process_id)

    async def spawn(self, spec: ProcessSpec) -> RemoteProcess:
        """Start ``spec`` in the guest: a :data:`~axis_eval.execute.process.Spawner`.

        ``marker`` and ``new_session`` are not used (the runner starts each process as
        the leader of its own group; the guest is the job's tree); ``stdio="merged"``
        sends stderr to the stdout reader; ``"inherit"`` cannot be honoured remotely.

        Raises:
            SpawnFailed: the program cannot start (exit code 127 when it is missing), or
                the runner cannot be reached (its ``__cause__`` is the
                :class:`GuestError`).
            ValueError: an invalid spec, as for ``spawn``.
        """
        from axis_eval.execute.guest._rpc import Rpc
        from axis_eval.execute.guest.remote import STREAM_WINDOW, RemoteProcess
        from axis_eval.execute.guest.stdin import input_writer

        if not spec.argv:
            raise ValueError("argv is empty")
        if spec.stdin_pipe and spec.stdin_data is not None:
            raise ValueError("stdin_pipe and stdin_data cannot be combined")
        if spec.stdio == "inherit":
            raise ValueError("a guest process cannot inherit this process's stdio")
        argv, env = list(spec.argv), dict(spec.env)
        if self._clear_env:
            if "=" in argv[0]:
                raise ValueError(f"a program named {argv[0]!r} cannot be started via env -i")
            argv = ["env", "-i", "--", *(f"{k}={v}" for k, v in env.items()), *argv]
            env = {}
        piped = spec.stdin_pipe or spec.stdin_data is not None
        try:
            state = await self._rpc.start_process(argv, spec.cwd, env, piped, 0.0)
        except GuestError as exc:
            raise _spawn_error(exc, spec) from exc
        streams = Rpc(
            self._rpc.endpoint, call_timeout_s=self._rpc.call_timeout_s, stream_window=STREAM_WINDOW
        )
        stdin = input_writer(streams, state.process_id) if piped else None
        proc = RemoteProcess(
            self._rpc, streams, state, merge_stderr=spec.stdio == "merged", stdin=stdin
        )
        if spec.stdin_data is not None and proc.stdin is not None:
            proc.stdin.write(spec.stdin_data)  # queued: sent as the process reads
            proc.stdin.close()
            proc.stdin = None  # as spawn: only stdin_pipe hands the pipe to the caller
        self._processes.add(proc)
        return proc

    # -- FileSystemService

    async def read_file_chunks(self, path: str) -> AsyncGenerator[bytes, None]:
        """The file's bytes in chunks of at most 64 KiB (absolute ``path``, or relative
        to the runner's workspace).

        Raises:
            FileNotFoundError: no such file.
            PermissionError: not allowed (outside the runner's file roots, or by mode).
            GuestError: any other failure (a directory, the connection...).
        """
        try:
            chunks = self._rpc.read_file(path)
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    yield chunk
        except GuestError as exc:
            raise _file_error(exc, path) from exc

    async def read_file(self, path: str, *, max_bytes: int = READ_FILE_LIMIT) -> bytes:
        """The whole file, as :meth:`read_file_chunks`; a file larger than ``max_bytes``
        raises GuestError ``RESOURCE_EXHAUSTED`` (read no further)."""
        buf = bytearray()
        chunks = self.read_file_chunks(path)
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                buf += chunk
                if len(buf) > max_bytes:
                    raise GuestError("RESOURCE_EXHAUSTED", f"{path}: larger than {max_bytes} bytes")
        return bytes(buf)

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> int:
        """Create or replace the file (parents made; ``mode`` for a new file); the bytes
        written. Raises as :meth:`read_file_chunks`."""
        return await self.write_file_chunks(path, [data], mode=mode)

    async def write_file_chunks(
        self, path: str, chunks: AsyncIterable[bytes] | Iterable[bytes], *, mode: int = 0o644
    ) -> int:
        """:meth:`write_file` from chunks, sent as they come (never all in memory)."""

        async def source() -> AsyncIterator[bytes]:
            if isinstance(chunks, AsyncIterable):
                async for chunk in chunks:
                    yield chunk
            else:
                for chunk in chunks:
                    yield chunk

        try:
            return await self._rpc.write_file(path, source(), mode)
        except GuestError as exc:
            raise _file_error(exc, path) from exc


if TYPE_CHECKING:

    def _is_spawner(client: GuestClient) -> Spawner:
        return client.spawn  # mypy: GuestClient.spawn is a Spawner
