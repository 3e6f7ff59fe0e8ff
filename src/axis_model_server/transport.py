"""HTTP/1.1 plumbing under the scripted model server: connections, bodies, JSON and SSE.

Knows nothing of tapes or protocols. :class:`TrackingHTTPServer` remembers its open
connections so that stopping the server also ends keep-alive connections and streams
(agents hold them open between turns); :class:`PlumbingHandler` reads request bodies as
agents send them (sized, chunked, gzip or deflate) and writes JSON and SSE answers.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import threading
import zlib
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["PlumbingHandler", "Problem", "TrackingHTTPServer", "error_body"]


class Problem(Exception):
    """A request the server refuses: the HTTP status and the error ``kind`` to answer."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def error_body(kind: str, message: str) -> dict[str, Any]:
    """An error body both Anthropic (``type``) and OpenAI/Gemini clients can read."""
    return {"type": "error", "error": {"type": kind, "message": message, "code": kind}}


class TrackingHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server that can close every connection it has open."""

    daemon_threads = True
    request_queue_size = 128  # many agents may connect at once

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class PlumbingHandler(BaseHTTPRequestHandler):
    """Reading bodies and writing answers; subclasses route the methods."""

    protocol_version = "HTTP/1.1"
    server_version = "axis-model-server"
    timeout = 300

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log replaces the access log."""

    def do_HEAD(self) -> None:
        with contextlib.suppress(Problem):
            self.read_body()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def read_body(self) -> bytes:
        """The request body, decoded from its ``Content-Encoding``."""
        length = self.headers.get("Content-Length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                raise Problem(400, "bad Content-Length") from None
            raw = self.rfile.read(size) if size > 0 else b""
        elif "chunked" in str(self.headers.get("Transfer-Encoding", "")).lower():
            raw = self._read_chunked()
        else:
            raw = b""
        encoding = str(self.headers.get("Content-Encoding", "")).strip().lower()
        if not raw or encoding in ("", "identity"):
            return raw
        try:
            if encoding == "gzip":
                return gzip.decompress(raw)
            if encoding == "deflate":
                return zlib.decompress(raw)
        except (OSError, zlib.error) as error:
            raise Problem(400, f"cannot decode the {encoding} body: {error}") from None
        raise Problem(415, f"unsupported Content-Encoding: {encoding}")

    def _read_chunked(self) -> bytes:
        data = bytearray()
        while True:
            line = self.rfile.readline(65537)
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(data)
            data += self.rfile.read(size)
            self.rfile.readline(65537)

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_scripted")
            self.end_headers()
            self.wfile.write(data)

    def send_sse(self, status: int, frames: Iterable[bytes]) -> None:
        """Write ``frames`` as an event stream, then close (the end of the stream is the
        end of the connection)."""
        self.close_connection = True
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.send_header("request-id", "req_scripted")
            self.end_headers()
            for chunk in frames:
                self.wfile.write(chunk)
                self.wfile.flush()

    def refuse(self) -> None:
        """Answer 403 to an outside connection and close it."""
        message = "axis-model-server refuses outside connections"
        self.send_json(403, error_body("forbidden", message))
        self.close_connection = True
