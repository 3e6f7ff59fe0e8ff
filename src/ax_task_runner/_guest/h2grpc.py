"""A small gRPC server over one already-accepted h2c connection (hyper-h2 + protobuf).

The runner's HTTP server owns the listening socket. When a connection opens with the
HTTP/2 prior-knowledge preface it hands the connection's reader, writer and the bytes it
already read to `GrpcH2Connection.serve`. Streams whose request is a POST with a
`content-type` starting with `application/grpc` are gRPC calls; any other HTTP/2 request
goes to an optional plain-HTTP fallback (as upstream routes non-gRPC h2c requests to its
HTTP mux), or gets a 404.

What is implemented of the gRPC-over-HTTP/2 protocol: length-prefixed messages (identity,
or gzip/deflate when the client compresses), unary and streaming calls in both directions,
`grpc-timeout`, `grpc-status`/`grpc-message` trailers (Trailers-Only for errors before any
message), flow control with back-pressure on uploads, RST_STREAM on cancellation, PING
(answered by h2) and GOAWAY on close. Not implemented: server reflection, response
compression, HTTP/1.1 `Upgrade: h2c`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from ax_task_runner.logs import event as log_event

_log = logging.getLogger("ax_task_runner.guest")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_STREAM_WINDOW = 1024 * 1024
_CONNECTION_WINDOW = 16 * 1024 * 1024
_MAX_HTTP_BODY = 1024 * 1024
_EOF = object()


class StatusCode(enum.IntEnum):
    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class GrpcError(Exception):
    """Raised by a handler to end its call with a non-OK status."""

    def __init__(self, code: StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Message(Protocol):
    def SerializeToString(self, *, deterministic: bool = ...) -> bytes: ...

    def ParseFromString(self, serialized: bytes, /) -> Any: ...


@dataclass
class CallContext:
    """What a handler may know about its call."""

    method: str
    metadata: Mapping[str, str]
    peer: str
    deadline: float | None = None  # time.monotonic() value


@dataclass(frozen=True)
class Method:
    """One RPC: message types, streaming shape and the coroutine that serves it.

    handler shapes: unary → `async (request, ctx) -> response`; server streaming →
    `(request, ctx) -> AsyncIterator[response]`; client streaming →
    `async (AsyncIterator[request], ctx) -> response`.
    """

    request_type: Callable[[], Any]
    response_type: Callable[[], Any]
    handler: Callable[..., Any]
    client_streaming: bool = False
    server_streaming: bool = False


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


# A plain-HTTP handler for non-gRPC HTTP/2 requests: (method, path with query, headers).
HttpFallback = Callable[[str, str, Mapping[str, str]], Awaitable[HttpResponse]]


def _not_found_response() -> HttpResponse:
    return HttpResponse(
        404,
        [("content-type", "text/plain; charset=utf-8"), ("x-content-type-options", "nosniff")],
        b"404 page not found\n",
    )


class _StreamGone(Exception):
    """The stream or the connection went away while we were sending."""


@dataclass
class _Stream:
    stream_id: int
    headers: dict[str, str]
    messages: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    buffer: bytearray = field(default_factory=bytearray)
    body: bytearray = field(default_factory=bytearray)
    unacked: int = 0
    remote_closed: bool = False
    closed: bool = False
    is_grpc: bool = False
    window: asyncio.Event = field(default_factory=asyncio.Event)
    body_done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    encoding: str = "identity"


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _parse_timeout(value: str | None) -> float | None:
    if not value or len(value) < 2 or not value[:-1].isdigit():
        return None
    unit = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}.get(value[-1])
    return None if unit is None else int(value[:-1]) * unit


def _grpc_message(text: str) -> str:
    # grpc-message is percent-encoded UTF-8 (printable ASCII except % stays as is).
    return quote(text, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")


class GrpcH2Connection:
    """Serves one h2c connection: gRPC calls to `methods` and plain HTTP/2 to a fallback."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        methods: Mapping[str, Method],
        enabled: bool,
        disabled_message: str,
        http_fallback: HttpFallback | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._methods = methods
        self._enabled = enabled
        self._disabled_message = disabled_message
        self._http_fallback = http_fallback
        self._conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding=None)
        )
        self._streams: dict[int, _Stream] = {}
        self._dead = False
        peer = writer.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer or "")

    # ------------------------------------------------------------------ connection loop

    async def serve(self, first_bytes: bytes) -> None:
        conn = self._conn
        conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 256,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _STREAM_WINDOW,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 64 * 1024,
            },
        )
        conn.initiate_connection()
        conn.increment_flow_control_window(_CONNECTION_WINDOW - 65535)
        try:
            await self._flush()
            data = first_bytes
            while not self._dead:
                if data:
                    try:
                        events = conn.receive_data(data)
                    except h2.exceptions.ProtocolError as exc:
                        log_event(
                            _log,
                            logging.DEBUG,
                            "h2c protocol error",
                            peer=self._peer,
                            error=str(exc),
                        )
                        with contextlib.suppress(Exception):
                            conn.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                            await self._flush()
                        break
                    for event in events:
                        self._on_event(event)
                    await self._flush()
                data = await self._reader.read(65536)
                if not data:
                    break
        except (ConnectionError, _StreamGone, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # The runner is shutting down: say goodbye politely, then stop.
            with contextlib.suppress(Exception):
                conn.close_connection()
                self._writer.write(conn.data_to_send())
            await self._teardown()
            raise
        await self._teardown()

    async def shutdown(self) -> None:
        """GOAWAY, stop every call on this connection and close it (serve() then returns)."""
        if self._dead:
            return
        with contextlib.suppress(Exception):
            self._conn.close_connection()
            self._writer.write(self._conn.data_to_send())
        await self._teardown()

    async def _teardown(self) -> None:
        self._dead = True
        tasks = [s.task for s in self._streams.values() if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for stream in self._streams.values():
            stream.window.set()
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _flush(self) -> None:
        data = self._conn.data_to_send()
        if data:
            if self._dead or self._writer.is_closing():
                raise _StreamGone
            self._writer.write(data)
            try:
                await self._writer.drain()
            except ConnectionError as exc:
                self._dead = True
                raise _StreamGone from exc

    def _on_event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._on_request(event)
        elif isinstance(event, h2.events.DataReceived):
            self._on_data(event)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None:
                stream.remote_closed = True
                stream.body_done.set()
                stream.messages.put_nowait(_EOF)
        elif isinstance(event, h2.events.StreamReset):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None:
                stream.closed = True
                stream.window.set()
                if stream.task is not None and not stream.task.done():
                    stream.task.cancel()
        elif isinstance(event, h2.events.WindowUpdated):
            targets = (
                list(self._streams.values())
                if not event.stream_id
                else [s for s in (self._streams.get(event.stream_id),) if s is not None]
            )
            for stream in targets:
                stream.window.set()
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for stream in self._streams.values():
                stream.window.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._dead = True
            for stream in self._streams.values():
                stream.closed = True
                stream.window.set()

    def _on_request(self, event: h2.events.RequestReceived) -> None:
        sid = event.stream_id or 0
        headers: dict[str, str] = {}
        for name, value in event.headers or []:
            key = (name.decode("latin-1") if isinstance(name, bytes) else name).lower()
            val = value.decode("latin-1") if isinstance(value, bytes) else value
            headers[key] = f"{headers[key]},{val}" if key in headers else val
        stream = _Stream(stream_id=sid, headers=headers)
        stream.is_grpc = headers.get(":method") == "POST" and headers.get(
            "content-type", ""
        ).startswith("application/grpc")
        stream.encoding = headers.get("grpc-encoding", "identity")
        self._streams[sid] = stream
        runner = self._run_grpc(stream) if stream.is_grpc else self._run_http(stream)
        stream.task = asyncio.get_running_loop().create_task(runner)
        stream.task.add_done_callback(self._forget(sid))
        # A request that ends with its HEADERS frame also yields a StreamEnded event.

    def _forget(self, sid: int) -> Callable[[asyncio.Task[None]], None]:
        def done(_task: asyncio.Task[None]) -> None:
            stream = self._streams.pop(sid, None)
            # Data the call never read (it ended early) still counts against the
            # connection's window: give it back, or the connection slowly starves.
            if stream is not None and stream.unacked and not self._dead:
                with contextlib.suppress(Exception):
                    self._conn.acknowledge_received_data(stream.unacked, sid)
                    stream.unacked = 0
                    if not self._writer.is_closing():
                        self._writer.write(self._conn.data_to_send())

        return done

    def _on_data(self, event: h2.events.DataReceived) -> None:
        sid = event.stream_id or 0
        flow = event.flow_controlled_length or 0
        data = event.data or b""
        stream = self._streams.get(sid)
        if stream is None or stream.closed:
            self._conn.acknowledge_received_data(flow, sid)
            return
        if not stream.is_grpc:
            self._conn.acknowledge_received_data(flow, sid)
            if len(stream.body) + len(data) <= _MAX_HTTP_BODY:
                stream.body += data
            return
        stream.unacked += flow
        stream.buffer += data
        buf = stream.buffer
        while len(buf) >= 5:
            size = int.from_bytes(buf[1:5], "big")
            if size > MAX_MESSAGE_BYTES:
                stream.messages.put_nowait(
                    GrpcError(StatusCode.RESOURCE_EXHAUSTED, f"message larger than {size} bytes")
                )
                buf.clear()
                break
            if len(buf) < 5 + size:
                break
            stream.messages.put_nowait((buf[0], bytes(buf[5 : 5 + size])))
            del buf[: 5 + size]
        # With nothing waiting in the queue the handler is blocked on us: open the window.
        if stream.messages.empty():
            self._ack(stream)

    def _ack(self, stream: _Stream) -> None:
        if stream.unacked and not self._dead:
            self._conn.acknowledge_received_data(stream.unacked, stream.stream_id)
            stream.unacked = 0

    # ------------------------------------------------------------------ gRPC calls

    async def _recv(self, stream: _Stream, request_type: Callable[[], Any]) -> Any:
        """The next request message, or None after the client half-closed."""
        if stream.messages.empty():
            self._ack(stream)
            await self._flush()
        item = await stream.messages.get()
        if stream.messages.empty():
            self._ack(stream)
            await self._flush()
        if item is _EOF:
            stream.messages.put_nowait(_EOF)
            return None
        if isinstance(item, GrpcError):
            raise item
        assert isinstance(item, tuple)
        flag, payload = item
        if flag:
            payload = self._decompress(stream.encoding, payload)
        message = request_type()
        try:
            message.ParseFromString(payload)
        except Exception as exc:
            raise GrpcError(StatusCode.INTERNAL, f"cannot parse request: {exc}") from exc
        return message

    @staticmethod
    def _decompress(encoding: str, payload: bytes) -> bytes:
        try:
            if encoding == "gzip":
                return zlib.decompress(payload, 16 + zlib.MAX_WBITS)
            if encoding == "deflate":
                return zlib.decompress(payload)
        except zlib.error as exc:
            raise GrpcError(StatusCode.INTERNAL, f"bad {encoding} message: {exc}") from exc
        raise GrpcError(StatusCode.UNIMPLEMENTED, f"unsupported grpc-encoding {encoding!r}")

    async def _requests(
        self, stream: _Stream, request_type: Callable[[], Any]
    ) -> AsyncIterator[Any]:
        while True:
            message = await self._recv(stream, request_type)
            if message is None:
                return
            yield message

    async def _run_grpc(self, stream: _Stream) -> None:
        path = stream.headers.get(":path", "")
        headers_sent = False
        code, message = StatusCode.OK, ""
        try:
            if stream.encoding not in ("identity", "gzip", "deflate"):
                raise GrpcError(
                    StatusCode.UNIMPLEMENTED, f"unsupported grpc-encoding {stream.encoding!r}"
                )
            if not self._enabled:
                raise GrpcError(StatusCode.UNIMPLEMENTED, self._disabled_message)
            method = self._methods.get(path)
            if method is None:
                raise GrpcError(StatusCode.UNIMPLEMENTED, f"unknown method {path}")
            timeout = _parse_timeout(stream.headers.get("grpc-timeout"))
            ctx = CallContext(
                method=path,
                metadata={k: v for k, v in stream.headers.items() if not k.startswith(":")},
                peer=self._peer,
                deadline=None if timeout is None else time.monotonic() + timeout,
            )
            try:
                async with asyncio.timeout(timeout):
                    if method.client_streaming:
                        request: Any = self._requests(stream, method.request_type)
                    else:
                        request = await self._recv(stream, method.request_type)
                        if request is None:
                            raise GrpcError(StatusCode.INTERNAL, "request message missing")
                        # A unary request ends with its one message; ignore anything else.
                    if method.server_streaming:
                        async for response in method.handler(request, ctx):
                            if not headers_sent:
                                await self._send_response_headers(stream)
                                headers_sent = True
                            await self._send_message(stream, response)
                    else:
                        response = await method.handler(request, ctx)
                        await self._send_response_headers(stream)
                        headers_sent = True
                        await self._send_message(stream, response)
            except TimeoutError as exc:
                raise GrpcError(StatusCode.DEADLINE_EXCEEDED, "deadline exceeded") from exc
        except GrpcError as exc:
            code, message = exc.code, exc.message
        except (_StreamGone, asyncio.CancelledError):
            return
        except Exception as exc:
            log_event(_log, logging.ERROR, "guest call failed", method=path, error=_describe(exc))
            code, message = StatusCode.INTERNAL, f"internal error: {type(exc).__name__}"
        with contextlib.suppress(_StreamGone, h2.exceptions.ProtocolError):
            await self._send_trailers(stream, code, message, headers_sent=headers_sent)

    async def _send_response_headers(self, stream: _Stream) -> None:
        self._check_open(stream)
        self._conn.send_headers(
            stream.stream_id,
            [(b":status", b"200"), (b"content-type", b"application/grpc")],
        )
        await self._flush()

    async def _send_message(self, stream: _Stream, message: _Message) -> None:
        payload = message.SerializeToString()
        await self._send_data(stream, b"\x00" + len(payload).to_bytes(4, "big") + payload)

    async def _send_trailers(
        self, stream: _Stream, code: StatusCode, message: str, *, headers_sent: bool
    ) -> None:
        self._check_open(stream)
        trailers: list[tuple[bytes, bytes]] = []
        if not headers_sent:  # Trailers-Only
            trailers += [(b":status", b"200"), (b"content-type", b"application/grpc")]
        trailers.append((b"grpc-status", str(int(code)).encode()))
        if message:
            trailers.append((b"grpc-message", _grpc_message(message).encode("ascii")))
        self._conn.send_headers(stream.stream_id, trailers, end_stream=True)
        if not stream.remote_closed:
            # The answer is complete; the client need not send the rest of its request.
            self._conn.reset_stream(stream.stream_id, h2.errors.ErrorCodes.NO_ERROR)
        stream.closed = True
        await self._flush()

    def _check_open(self, stream: _Stream) -> None:
        if stream.closed or self._dead:
            raise _StreamGone

    async def _send_data(self, stream: _Stream, data: bytes, *, end_stream: bool = False) -> None:
        view = memoryview(data)
        while True:
            self._check_open(stream)
            try:
                window = self._conn.local_flow_control_window(stream.stream_id)
            except h2.exceptions.StreamClosedError as exc:
                raise _StreamGone from exc
            size = min(window, self._conn.max_outbound_frame_size, len(view))
            if size <= 0 and len(view) > 0:
                stream.window.clear()
                await stream.window.wait()
                continue
            last = size == len(view)
            self._conn.send_data(
                stream.stream_id, view[:size].tobytes(), end_stream=end_stream and last
            )
            view = view[size:]
            await self._flush()
            if last:
                return

    # ------------------------------------------------------------------ plain HTTP/2

    async def _run_http(self, stream: _Stream) -> None:
        try:
            await stream.body_done.wait()
            method = stream.headers.get(":method", "GET")
            path = stream.headers.get(":path", "/")
            if self._http_fallback is not None:
                response = await self._http_fallback(method, path, stream.headers)
            else:
                response = _not_found_response()
            self._check_open(stream)
            headers = [(b":status", str(response.status).encode())]
            headers += [(k.lower().encode(), v.encode("latin-1")) for k, v in response.headers]
            headers.append((b"content-length", str(len(response.body)).encode()))
            body = response.body if method != "HEAD" else b""
            self._conn.send_headers(stream.stream_id, headers, end_stream=not body)
            await self._flush()
            if body:
                await self._send_data(stream, body, end_stream=True)
            stream.closed = True
        except (_StreamGone, asyncio.CancelledError, h2.exceptions.ProtocolError):
            return
        except Exception as exc:
            log_event(
                _log,
                logging.ERROR,
                "h2c request failed",
                path=stream.headers.get(":path"),
                error=_describe(exc),
            )
            with contextlib.suppress(Exception):
                self._conn.reset_stream(stream.stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
                await self._flush()
