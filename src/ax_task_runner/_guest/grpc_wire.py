"""gRPC over HTTP/2, the parts that are not HTTP/2: status codes, messages, metadata.

What a handler sees (:class:`Method`, :class:`CallContext`, :class:`GrpcError`) and the
protocol's own rules: length-prefixed message frames, gzip/deflate request compression,
``grpc-timeout``, and the ``grpc-status``/``grpc-message`` trailers. No I/O here.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

__all__ = [
    "ENCODINGS",
    "MAX_MESSAGE_BYTES",
    "CallContext",
    "GrpcError",
    "Message",
    "Method",
    "StatusCode",
    "cut_messages",
    "decompress",
    "frame",
    "is_grpc_request",
    "parse_timeout",
    "response_headers",
    "trailers",
]

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
ENCODINGS = ("identity", "gzip", "deflate")
"""Request compressions understood (responses are never compressed)."""


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


class Message(Protocol):
    """A protobuf message, as far as the server uses one."""

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


def is_grpc_request(headers: Mapping[str, str]) -> bool:
    """A POST whose ``content-type`` starts with ``application/grpc`` is a gRPC call."""
    return headers.get(":method") == "POST" and headers.get("content-type", "").startswith(
        "application/grpc"
    )


def parse_timeout(value: str | None) -> float | None:
    """Seconds in a ``grpc-timeout`` header (``10S``, ``500m`` …); None if absent or bad."""
    if not value or len(value) < 2 or not value[:-1].isdigit():
        return None
    unit = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}.get(value[-1])
    return None if unit is None else int(value[:-1]) * unit


def cut_messages(buffer: bytearray) -> Iterator[tuple[int, bytes] | GrpcError]:
    """Take every complete ``(compressed flag, payload)`` frame off the front of ``buffer``.

    A frame announcing more than :data:`MAX_MESSAGE_BYTES` yields a RESOURCE_EXHAUSTED
    error and empties the buffer (the rest of the stream cannot be framed any more).
    """
    while len(buffer) >= 5:
        size = int.from_bytes(buffer[1:5], "big")
        if size > MAX_MESSAGE_BYTES:
            yield GrpcError(StatusCode.RESOURCE_EXHAUSTED, f"message larger than {size} bytes")
            buffer.clear()
            return
        if len(buffer) < 5 + size:
            return
        yield buffer[0], bytes(buffer[5 : 5 + size])
        del buffer[: 5 + size]


def decompress(encoding: str, payload: bytes) -> bytes:
    """A compressed message's payload, by the call's ``grpc-encoding``."""
    try:
        if encoding == "gzip":
            return zlib.decompress(payload, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.decompress(payload)
    except zlib.error as exc:
        raise GrpcError(StatusCode.INTERNAL, f"bad {encoding} message: {exc}") from exc
    raise GrpcError(StatusCode.UNIMPLEMENTED, f"unsupported grpc-encoding {encoding!r}")


def frame(message: Message) -> bytes:
    """A response message as an uncompressed length-prefixed frame."""
    payload = message.SerializeToString()
    return b"\x00" + len(payload).to_bytes(4, "big") + payload


def response_headers() -> list[tuple[bytes, bytes]]:
    return [(b":status", b"200"), (b"content-type", b"application/grpc")]


def trailers(code: StatusCode, message: str, *, trailers_only: bool) -> list[tuple[bytes, bytes]]:
    """The call's last HEADERS frame; ``trailers_only`` when no response headers went out."""
    out = response_headers() if trailers_only else []
    out.append((b"grpc-status", str(int(code)).encode()))
    if message:
        out.append((b"grpc-message", _percent_encoded(message).encode("ascii")))
    return out


def _percent_encoded(text: str) -> str:
    # grpc-message is percent-encoded UTF-8 (printable ASCII except % stays as is).
    return quote(text, safe=" !\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~")
