"""Helpers for the judging tests: runs to score, judge tapes, and a misbehaving API stub.

API judges are tested over real HTTP on 127.0.0.1 through the official SDKs: against the
scripted model server (tapes whose turns answer verdict JSON), and against a small stub
(below) that answers 429/5xx with ``Retry-After`` when a test needs failures.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer, parse_tape

from .helpers import (
    Stub,
)


@pytest.fixture
def serve_tape() -> Iterator[Callable[[dict[str, Any]], ScriptedModelServer]]:
    """``serve_tape(tape)`` → a started scripted model server (stopped after the test)."""
    servers: list[ScriptedModelServer] = []

    def start(tape: dict[str, Any]) -> ScriptedModelServer:
        server = ScriptedModelServer(parse_tape(tape)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def stub() -> Iterator[Stub]:
    """A started :class:`Stub` on 127.0.0.1 (``stub.url``)."""
    state = Stub()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}")
            status, headers, payload = state.answer(body)
            data = json.dumps(payload).encode()
            with contextlib.suppress(OSError):  # the client may have timed out and gone
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that timed out is the point of some tests

    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)
