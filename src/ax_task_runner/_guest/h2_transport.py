"""One server-side HTTP/2 connection (h2c, hyper-h2): streams, flow control, GOAWAY.

The transport turns frames into :class:`H2Stream` objects and starts one task per
stream with the handler it was given; the handler answers through :meth:`send_headers`
and :meth:`send_data`. What a stream carries is the handler's business, except how its
request body is taken in: a gRPC stream's data is cut into messages as it arrives and
its flow-control window opens only as the handler reads them (back-pressure on
uploads), while a plain request's body is acknowledged at once and kept up to a limit.
PING is answered by h2 itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from ax_task_runner._guest.grpc_wire import GrpcError, cut_messages, is_grpc_request
from ax_task_runner.logs import event as log_event

__all__ = ["H2Stream", "H2Transport", "StreamGone", "StreamHandler"]

_log = logging.getLogger("ax_task_runner.guest")

_STREAM_WINDOW = 1024 * 1024
_CONNECTION_WINDOW = 16 * 1024 * 1024
_MAX_HTTP_BODY = 1024 * 1024
_EOF = object()


class StreamGone(Exception):
    """The stream or the connection went away while we were sending."""


@dataclass
class H2Stream:
    """One request: its headers, what has arrived of its body, and its handler's task."""

    stream_id: int
    headers: dict[str, str]
    is_grpc: bool = False
    messages: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    """gRPC only: ``(flag, payload)`` frames, a :class:`GrpcError`, then the end marker."""
    buffer: bytearray = field(default_factory=bytearray)
    """gRPC only: bytes of a frame not complete yet."""
    body: bytearray = field(default_factory=bytearray)
    """Plain HTTP only: the request body (cut at a limit)."""
    unacked: int = 0
    remote_closed: bool = False
    closed: bool = False
    window: asyncio.Event = field(default_factory=asyncio.Event)
    body_done: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


StreamHandler = Callable[[H2Stream], Coroutine[Any, Any, None]]
"""Serves one stream, from its request headers to its last frame."""


class H2Transport:
    """Serves one accepted h2c connection, handing each stream to ``handler``."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: StreamHandler
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._handler = handler
        self._conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding=None)
        )
        self._streams: dict[int, H2Stream] = {}
        self._dead = False
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer or "")
        """``host:port`` of the client."""

    # ------------------------------------------------------------------ connection loop

    async def serve(self, first_bytes: bytes) -> None:
        """Read frames until the connection closes; ``first_bytes`` were read already."""
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
            await self.flush()
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
                            peer=self.peer,
                            error=str(exc),
                        )
                        with contextlib.suppress(Exception):
                            conn.close_connection(h2.errors.ErrorCodes.PROTOCOL_ERROR)
                            await self.flush()
                        break
                    for event in events:
                        self._on_event(event)
                    await self.flush()
                data = await self._reader.read(65536)
                if not data:
                    break
        except (ConnectionError, StreamGone, asyncio.IncompleteReadError):
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
        """GOAWAY, stop every stream's task and close (serve() then returns)."""
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

    async def flush(self) -> None:
        """Write what h2 has queued and wait for the socket to drain."""
        data = self._conn.data_to_send()
        if data:
            if self._dead or self._writer.is_closing():
                raise StreamGone
            self._writer.write(data)
            try:
                await self._writer.drain()
            except ConnectionError as exc:
                self._dead = True
                raise StreamGone from exc

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
        stream = H2Stream(stream_id=sid, headers=headers, is_grpc=is_grpc_request(headers))
        self._streams[sid] = stream
        stream.task = asyncio.get_running_loop().create_task(self._handler(stream))
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
        for item in cut_messages(stream.buffer):
            stream.messages.put_nowait(item)
        # With nothing waiting in the queue the handler is blocked on us: open the window.
        if stream.messages.empty():
            self._ack(stream)

    def _ack(self, stream: H2Stream) -> None:
        if stream.unacked and not self._dead:
            self._conn.acknowledge_received_data(stream.unacked, stream.stream_id)
            stream.unacked = 0

    # ------------------------------------------------------------------ for handlers

    async def receive(self, stream: H2Stream) -> tuple[int, bytes] | None:
        """A gRPC stream's next ``(compressed flag, payload)``; None once the client is done.

        The stream's window is opened whenever its queue runs dry, so a client sends no
        more than the handler keeps up with.

        Raises:
            GrpcError: the client sent a message too large to frame.
        """
        if stream.messages.empty():
            self._ack(stream)
            await self.flush()
        item = await stream.messages.get()
        if stream.messages.empty():
            self._ack(stream)
            await self.flush()
        if item is _EOF:
            stream.messages.put_nowait(_EOF)
            return None
        if isinstance(item, GrpcError):
            raise item
        assert isinstance(item, tuple)
        return item

    def check_open(self, stream: H2Stream) -> None:
        """Raise :class:`StreamGone` if nothing more can be sent on ``stream``."""
        if stream.closed or self._dead:
            raise StreamGone

    def send_headers(
        self, stream: H2Stream, headers: list[tuple[bytes, bytes]], *, end_stream: bool = False
    ) -> None:
        """Queue a HEADERS frame (written by the next :meth:`flush`)."""
        self.check_open(stream)
        self._conn.send_headers(stream.stream_id, headers, end_stream=end_stream)

    async def send_data(self, stream: H2Stream, data: bytes, *, end_stream: bool = False) -> None:
        """Send ``data``, waiting for the peer's window whenever it is used up."""
        view = memoryview(data)
        while True:
            self.check_open(stream)
            try:
                window = self._conn.local_flow_control_window(stream.stream_id)
            except h2.exceptions.StreamClosedError as exc:
                raise StreamGone from exc
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
            await self.flush()
            if last:
                return

    def reset(self, stream: H2Stream, code: h2.errors.ErrorCodes) -> None:
        """Queue RST_STREAM (written by the next :meth:`flush`)."""
        self._conn.reset_stream(stream.stream_id, code)
