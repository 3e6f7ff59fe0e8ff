"""The wire under the guest client: one grpclib channel and the seven guest methods.

Method paths are written out (``/ateenv.v1alpha.ProcessService/StartProcess``...) and the
messages are ``guest_pb2``'s: no generated stubs. Every failure leaves as a
:class:`~.models.GuestError` named by its gRPC status. This module is the only one of the
package that loads grpclib and protobuf; the client imports it when it connects.
"""

from __future__ import annotations

import contextlib
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Callable,
    Iterator,
)
from dataclasses import dataclass
from typing import Any, cast

import h2.exceptions
from grpclib.client import Channel, StreamUnaryMethod, UnaryStreamMethod, UnaryUnaryMethod
from grpclib.config import Configuration
from grpclib.exceptions import GRPCError, ProtocolError, StreamTerminatedError

from axis_eval.execute.guest import guest_pb2 as pb
from axis_eval.execute.guest.models import GuestError, OutputChunk, ProcessState

__all__ = ["MESSAGE_BYTES", "Endpoint", "Rpc", "translated"]

PROCESS = "/ateenv.v1alpha.ProcessService/"
FILES = "/ateenv.v1alpha.FileSystemService/"
MESSAGE_BYTES = 256 * 1024
"""Largest data payload sent in one message (stdin, file chunks): well under the runner's
message limit, and small enough to interleave with other streams."""


@dataclass(frozen=True)
class Endpoint:
    """Where the runner listens: a Unix socket, or ``host:port`` (h2c)."""

    unix_socket: str | None
    host: str
    port: int | None

    def __str__(self) -> str:
        return f"unix:{self.unix_socket}" if self.unix_socket else f"{self.host}:{self.port}"

    def channel(self, stream_window: int | None = None) -> Channel:
        """A new channel (one HTTP/2 connection, made on first use). ``stream_window``
        bounds what the server may send on a stream before we read it; the connection's
        window is four times that, so one stalled stream leaves room for the others."""
        config = None
        if stream_window is not None:
            config = Configuration(
                http2_stream_window_size=stream_window,
                http2_connection_window_size=4 * stream_window,
            )
        if self.unix_socket is not None:
            return Channel(path=self.unix_socket, config=config)
        return Channel(self.host, self.port, config=config)


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """grpclib's and the socket's failures as :class:`GuestError`."""
    try:
        yield
    except GRPCError as exc:
        raise GuestError(exc.status.name, exc.message or f"{what} failed") from exc
    except StreamTerminatedError as exc:
        raise GuestError("UNAVAILABLE", f"{what}: the connection was lost ({exc})") from exc
    except TimeoutError as exc:
        raise GuestError("DEADLINE_EXCEEDED", f"{what}: no answer in time") from exc
    except (OSError, ProtocolError, h2.exceptions.H2Error) as exc:
        raise GuestError("UNAVAILABLE", f"{what}: {exc}") from exc


def state_of(msg: pb.Process) -> ProcessState:
    exited = msg.state == pb.PROCESS_STATE_EXITED
    return ProcessState(
        process_id=msg.process_id,
        running=not exited,
        exit_code=int(msg.exit_code) if exited else None,
        pid=int(msg.pid),
    )


def _pieces(data: bytes) -> list[bytes]:
    return [data[i : i + MESSAGE_BYTES] for i in range(0, len(data), MESSAGE_BYTES)] or [b""]


class Rpc:
    """The guest methods over one channel."""

    def __init__(
        self, endpoint: Endpoint, *, call_timeout_s: float, stream_window: int | None = None
    ) -> None:
        self.endpoint = endpoint
        self.call_timeout_s = call_timeout_s
        self.channel = endpoint.channel(stream_window)
        self.closed = False

    def close(self) -> None:
        self.closed = True
        self.channel.close()

    def _check_open(self, what: str) -> None:
        # A closed grpclib channel would quietly connect again on its next call.
        if self.closed:
            raise GuestError("UNAVAILABLE", f"{what}: the client is closed")

    async def _unary(self, name: str, request: Any, reply_type: type[Any]) -> Any:
        method: UnaryUnaryMethod[Any, Any] = UnaryUnaryMethod(
            self.channel, PROCESS + name, type(request), reply_type
        )
        self._check_open(name)
        with translated(name):
            return await method(request, timeout=self.call_timeout_s)

    # -- ProcessService

    async def start_process(
        self, argv: list[str], cwd: str, env: dict[str, str], stdin: bool, timeout_s: float
    ) -> ProcessState:
        request = pb.StartProcessRequest(command=argv, cwd=cwd, env=env, stdin=stdin)
        if timeout_s > 0:
            request.timeout.FromNanoseconds(int(timeout_s * 1e9))
        return state_of(await self._unary("StartProcess", request, pb.Process))

    async def get_process(self, process_id: str) -> ProcessState:
        request = pb.GetProcessRequest(process_id=process_id)
        return state_of(await self._unary("GetProcess", request, pb.Process))

    async def signal(self, process_id: str, sig: int) -> ProcessState:
        # Any number goes on the wire (an open enum); the runner answers INVALID_ARGUMENT
        # for one outside the Signal enum.
        request = pb.SignalProcessRequest(process_id=process_id, signal=cast("pb.Signal", sig))
        return state_of(await self._unary("SignalProcess", request, pb.Process))

    async def output(
        self, process_id: str, *, follow: bool, stdout_offset: int, stderr_offset: int
    ) -> AsyncGenerator[OutputChunk, None]:
        method: UnaryStreamMethod[Any, Any] = UnaryStreamMethod(
            self.channel,
            PROCESS + "StreamProcessOutput",
            pb.StreamProcessOutputRequest,
            pb.ProcessOutput,
        )
        request = pb.StreamProcessOutputRequest(
            process_id=process_id,
            stdout_offset=stdout_offset,
            stderr_offset=stderr_offset,
            follow=follow,
        )
        self._check_open("StreamProcessOutput")
        with translated("StreamProcessOutput"):
            async with method.open() as stream:
                await stream.send_message(request, end=True)
                async for msg in stream:
                    kind = msg.WhichOneof("output")
                    if kind == "stdout":
                        yield OutputChunk(msg.stdout, b"", None)
                    elif kind == "stderr":
                        yield OutputChunk(b"", msg.stderr, None)
                    elif kind == "exit":
                        yield OutputChunk(b"", b"", state_of(msg.exit))

    async def feed_input(
        self, process_id: str, next_piece: Callable[[], Awaitable[tuple[bytes, bool] | None]]
    ) -> int:
        """One WriteProcessInput call fed by ``next_piece()``: ``(data, close)`` sends data
        (closing stdin after it when ``close``, which ends the call); None ends the call
        with stdin left open. Returns the bytes written. A send waits while the stream's
        window is full (the process is not reading its stdin)."""
        method: StreamUnaryMethod[Any, Any] = StreamUnaryMethod(
            self.channel,
            PROCESS + "WriteProcessInput",
            pb.WriteProcessInputRequest,
            pb.WriteProcessInputResponse,
        )
        self._check_open("WriteProcessInput")
        with translated("WriteProcessInput"):
            async with method.open() as stream:
                first = True
                while (item := await next_piece()) is not None:
                    data, close = item
                    pieces = _pieces(data)
                    for i, piece in enumerate(pieces):
                        request = pb.WriteProcessInputRequest(
                            process_id=process_id if first else "",
                            data=piece,
                            close=close and i == len(pieces) - 1,
                        )
                        await stream.send_message(request)
                        first = False
                    if close:
                        break
                if first:  # the runner wants the process named on a first message
                    await stream.send_message(pb.WriteProcessInputRequest(process_id=process_id))
                await stream.end()
                reply = await stream.recv_message()
        return int(reply.bytes_written) if reply is not None else 0

    async def write_input(self, process_id: str, data: bytes, close: bool) -> int:
        items: list[tuple[bytes, bool]] = [(data, close)]

        async def next_piece() -> tuple[bytes, bool] | None:
            return items.pop() if items else None

        return await self.feed_input(process_id, next_piece)

    # -- FileSystemService

    async def read_file(self, path: str) -> AsyncGenerator[bytes, None]:
        method: UnaryStreamMethod[Any, Any] = UnaryStreamMethod(
            self.channel, FILES + "ReadFile", pb.ReadFileRequest, pb.ReadFileResponse
        )
        self._check_open("ReadFile")
        with translated("ReadFile"):
            async with method.open() as stream:
                await stream.send_message(pb.ReadFileRequest(path=path), end=True)
                async for msg in stream:
                    if msg.chunk:
                        yield msg.chunk

    async def write_file(self, path: str, chunks: AsyncIterable[bytes], mode: int) -> int:
        method: StreamUnaryMethod[Any, Any] = StreamUnaryMethod(
            self.channel, FILES + "WriteFile", pb.WriteFileRequest, pb.WriteFileResponse
        )
        self._check_open("WriteFile")
        with translated("WriteFile"):
            async with method.open() as stream:
                # The first message names the file (and creates or truncates it).
                await stream.send_message(pb.WriteFileRequest(path=path, mode=mode))
                async for chunk in chunks:
                    for piece in _pieces(chunk):
                        if piece:
                            await stream.send_message(pb.WriteFileRequest(chunk=piece))
                await stream.end()
                reply = await stream.recv_message()
        return int(reply.bytes_written) if reply is not None else 0
