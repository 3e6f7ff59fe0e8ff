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
(answered by h2) and GOAWAY on close. Not implemented: response compression, HTTP/1.1
`Upgrade: h2c`. (Server reflection is one more method table, `reflection.py`.)

Three modules: `h2_transport` (the HTTP/2 connection and its streams), `grpc_wire` (the
gRPC rules: status codes, framing, compression, trailers) and this one, which routes each
stream to a gRPC method or the plain-HTTP fallback and runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import h2.errors
import h2.exceptions

from ax_task_runner._guest.grpc_wire import (
    ENCODINGS,
    MAX_MESSAGE_BYTES,
    CallContext,
    GrpcError,
    Message,
    Method,
    StatusCode,
    decompress,
    frame,
    parse_timeout,
    response_headers,
    trailers,
)
from ax_task_runner._guest.h2_transport import H2Stream, H2Transport, StreamGone
from ax_task_runner.logs import event as log_event

__all__ = [
    "MAX_MESSAGE_BYTES",
    "CallContext",
    "GrpcError",
    "GrpcH2Connection",
    "HttpFallback",
    "HttpResponse",
    "Method",
    "StatusCode",
]

_log = logging.getLogger("ax_task_runner.guest")


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


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


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
        self._methods = methods
        self._enabled = enabled
        self._disabled_message = disabled_message
        self._http_fallback = http_fallback
        self._h2 = H2Transport(reader, writer, self._serve_stream)

    async def serve(self, first_bytes: bytes) -> None:
        """Serve until the client closes the connection (or :meth:`shutdown`)."""
        await self._h2.serve(first_bytes)

    async def shutdown(self) -> None:
        """GOAWAY, stop every call on this connection and close it (serve() then returns)."""
        await self._h2.shutdown()

    def _serve_stream(self, stream: H2Stream) -> Coroutine[Any, Any, None]:
        return self._run_grpc(stream) if stream.is_grpc else self._run_http(stream)

    # ------------------------------------------------------------------ gRPC calls

    async def _recv(self, stream: H2Stream, encoding: str, request_type: Callable[[], Any]) -> Any:
        """The next request message, or None after the client half-closed."""
        item = await self._h2.receive(stream)
        if item is None:
            return None
        flag, payload = item
        if flag:
            payload = decompress(encoding, payload)
        message = request_type()
        try:
            message.ParseFromString(payload)
        except Exception as exc:
            raise GrpcError(StatusCode.INTERNAL, f"cannot parse request: {exc}") from exc
        return message

    async def _requests(
        self, stream: H2Stream, encoding: str, request_type: Callable[[], Any]
    ) -> AsyncIterator[Any]:
        while True:
            message = await self._recv(stream, encoding, request_type)
            if message is None:
                return
            yield message

    def _route(self, path: str, encoding: str) -> Method:
        if encoding not in ENCODINGS:
            raise GrpcError(StatusCode.UNIMPLEMENTED, f"unsupported grpc-encoding {encoding!r}")
        if not self._enabled:
            raise GrpcError(StatusCode.UNIMPLEMENTED, self._disabled_message)
        method = self._methods.get(path)
        if method is None:
            raise GrpcError(StatusCode.UNIMPLEMENTED, f"unknown method {path}")
        return method

    async def _run_grpc(self, stream: H2Stream) -> None:
        path = stream.headers.get(":path", "")
        encoding = stream.headers.get("grpc-encoding", "identity")
        headers_sent = False
        code, message = StatusCode.OK, ""
        try:
            method = self._route(path, encoding)
            timeout = parse_timeout(stream.headers.get("grpc-timeout"))
            ctx = CallContext(
                method=path,
                metadata={k: v for k, v in stream.headers.items() if not k.startswith(":")},
                peer=self._h2.peer,
                deadline=None if timeout is None else time.monotonic() + timeout,
            )
            try:
                async with asyncio.timeout(timeout):
                    if method.client_streaming:
                        request: Any = self._requests(stream, encoding, method.request_type)
                    else:
                        request = await self._recv(stream, encoding, method.request_type)
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
        except (StreamGone, asyncio.CancelledError):
            return
        except Exception as exc:
            log_event(_log, logging.ERROR, "guest call failed", method=path, error=_describe(exc))
            code, message = StatusCode.INTERNAL, f"internal error: {type(exc).__name__}"
        with contextlib.suppress(StreamGone, h2.exceptions.ProtocolError):
            await self._send_trailers(stream, code, message, headers_sent=headers_sent)

    async def _send_response_headers(self, stream: H2Stream) -> None:
        self._h2.send_headers(stream, response_headers())
        await self._h2.flush()

    async def _send_message(self, stream: H2Stream, message: Message) -> None:
        await self._h2.send_data(stream, frame(message))

    async def _send_trailers(
        self, stream: H2Stream, code: StatusCode, message: str, *, headers_sent: bool
    ) -> None:
        last = trailers(code, message, trailers_only=not headers_sent)
        self._h2.send_headers(stream, last, end_stream=True)
        if not stream.remote_closed:
            # The answer is complete; the client need not send the rest of its request.
            self._h2.reset(stream, h2.errors.ErrorCodes.NO_ERROR)
        stream.closed = True
        await self._h2.flush()

    # ------------------------------------------------------------------ plain HTTP/2

    async def _run_http(self, stream: H2Stream) -> None:
        try:
            await stream.body_done.wait()
            method = stream.headers.get(":method", "GET")
            path = stream.headers.get(":path", "/")
            if self._http_fallback is not None:
                response = await self._http_fallback(method, path, stream.headers)
            else:
                response = _not_found_response()
            headers = [(b":status", str(response.status).encode())]
            headers += [(k.lower().encode(), v.encode("latin-1")) for k, v in response.headers]
            headers.append((b"content-length", str(len(response.body)).encode()))
            body = response.body if method != "HEAD" else b""
            self._h2.send_headers(stream, headers, end_stream=not body)
            await self._h2.flush()
            if body:
                await self._h2.send_data(stream, body, end_stream=True)
            stream.closed = True
        except (StreamGone, asyncio.CancelledError, h2.exceptions.ProtocolError):
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
                self._h2.reset(stream, h2.errors.ErrorCodes.INTERNAL_ERROR)
                await self._h2.flush()
