"""The scripted model server: an HTTP server on 127.0.0.1 playing back a tape."""

from __future__ import annotations

import contextlib
import gzip
import ipaddress
import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from axis_model_server.normalize import (
    ModelRequest,
    parse_anthropic,
    parse_chat,
    parse_gemini,
    parse_responses,
)
from axis_model_server.records import (
    ConnectAttempt,
    RequestRecord,
    ToolCallRecord,
    Usage,
    UsageTotals,
)
from axis_model_server.script import Reply, decide
from axis_model_server.tape import Tape, load_tape
from axis_model_server.wire import anthropic, gemini, openai_chat, openai_responses
from axis_model_server.wire._sse import frame

__all__ = ["DEFAULT_MODEL", "MODEL_PROTOCOLS", "ScriptedModelServer"]

DEFAULT_MODEL = "scripted-model"
"""The model name answered when a request names none, and listed by ``GET /v1/models``."""

MODEL_PROTOCOLS = ("anthropic", "openai-responses", "openai-chat", "gemini")

_GEMINI = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_KEPT_HEADERS = ("user-agent", "originator")
_SELF_HOSTS = {"127.0.0.1", "localhost", "::1"}


@dataclass
class _Answer:
    status: int
    body: Any = None
    frames: Iterable[bytes] | None = None
    record: dict[str, Any] = field(default_factory=dict)


class _Problem(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


class ScriptedModelServer:
    """Serve a :class:`Tape` on ``http://127.0.0.1:PORT`` in a background thread.

    Speaks the Anthropic Messages, OpenAI Responses, OpenAI Chat Completions and Gemini
    APIs, streaming and plain. ``port=0`` picks a free port (see :attr:`port`). Use as a
    context manager, or call :meth:`start` and :meth:`stop`.

    Args:
        tape: a :class:`Tape`, or the path of a tape file.
        host: a loopback address to bind (the server never listens on other interfaces).
        port: the port, 0 for any free one.
        log_path: also append every record as a JSON line to this file.
        on_record: called (in the serving thread) with each new record.
    """

    def __init__(
        self,
        tape: Tape | str | PathLike[str],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        log_path: str | PathLike[str] | None = None,
        on_record: Callable[[RequestRecord | ConnectAttempt], None] | None = None,
    ) -> None:
        self.tape = tape if isinstance(tape, Tape) else load_tape(Path(tape))
        if host == "localhost":
            host = "127.0.0.1"
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"host must be a loopback IPv4 address, not {host!r}") from None
        if address.version != 4 or not address.is_loopback:
            raise ValueError(f"host must be a loopback IPv4 address, not {host!r}")
        self.host = host
        self._requested_port = port
        self._log_path = Path(log_path) if log_path is not None else None
        self._on_record = on_record
        self._lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._connects: list[ConnectAttempt] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> ScriptedModelServer:
        """Bind and serve in a daemon thread; returns ``self``. The port is bound on return."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self._requested_port), self)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"axis-model-server:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and release the port."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` is called from another thread
        or KeyboardInterrupt."""
        self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(timeout=0.5)
        finally:
            self.stop()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL to give agents."""
        return f"http://{self.host}:{self.port}"

    # ------------------------------------------------------------------ the log

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log (every request except trapped proxy attempts)."""
        with self._lock:
            return list(self._requests)

    @property
    def connect_attempts(self) -> list[ConnectAttempt]:
        """A copy of the trapped outside connections (CONNECT, absolute-URL requests)."""
        with self._lock:
            return list(self._connects)

    def reset_log(self) -> None:
        """Forget all records."""
        with self._lock:
            self._requests.clear()
            self._connects.clear()

    def usage_totals(self) -> UsageTotals:
        """Usage summed over conversation turns (``main``) and over all model requests."""
        main, every = Usage(), Usage()
        count = sides = 0
        for record in self.requests:
            if record.protocol not in MODEL_PROTOCOLS or record.status != 200:
                continue
            count += 1
            every = every + record.usage
            if record.side:
                sides += 1
            else:
                main = main + record.usage
        return UsageTotals(main=main, all=every, requests=count, side_requests=sides)

    def _add(self, record: RequestRecord | ConnectAttempt) -> None:
        with self._lock:
            if isinstance(record, ConnectAttempt):
                self._connects.append(record)
            else:
                self._requests.append(record)
            if self._log_path is not None:
                kind = "connect" if isinstance(record, ConnectAttempt) else "request"
                line = json.dumps({"kind": kind, **record.model_dump(mode="json")})
                with self._log_path.open("a", encoding="utf-8") as out:
                    out.write(line + "\n")
        if self._on_record is not None:
            with contextlib.suppress(Exception):
                self._on_record(record)

    # ------------------------------------------------------------------ answering

    def _is_self(self, host: str, port: int | None) -> bool:
        return host in _SELF_HOSTS and port == self.port

    def _trap(self, method: str, target: str, headers: dict[str, str]) -> None:
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]") or target
            port = int(port_text) if port_text.isdigit() else None
        else:
            parts = urlsplit(target)
            host = parts.hostname or ""
            port = parts.port or (443 if parts.scheme == "https" else 80)
        self._add(
            ConnectAttempt(
                timestamp=time.time(),
                method=method,
                target=target,
                host=host,
                port=port,
                headers=headers,
            )
        )

    def _answer(self, method: str, path: str, body: bytes) -> _Answer:
        route, _, query = path.partition("?")
        if method == "GET":
            return self._get(route)
        if method != "POST":
            raise _Problem(404, f"no route for {method} {route}", "not_found_error")
        payload = _json_body(body)
        if route.endswith("/messages/count_tokens"):
            req = parse_anthropic(payload)
            reply = decide(self.tape, req, count_only=True)
            return self._reply(req, reply, 200, anthropic.count_tokens(reply))
        if route.endswith("/messages"):
            req = parse_anthropic(payload)
            reply = decide(self.tape, req)
            model = req.model or DEFAULT_MODEL
            if req.stream:
                return self._reply(req, reply, 200, frames=anthropic.stream(reply, model))
            return self._reply(req, reply, 200, anthropic.message(reply, model))
        if route.endswith("/chat/completions"):
            req = parse_chat(payload)
            reply = decide(self.tape, req)
            model = req.model or DEFAULT_MODEL
            if req.stream:
                options = payload.get("stream_options")
                include = isinstance(options, dict) and bool(options.get("include_usage"))
                frames = openai_chat.stream(reply, model, include_usage=include)
                return self._reply(req, reply, 200, frames=frames)
            return self._reply(req, reply, 200, openai_chat.completion(reply, model))
        if route.endswith("/responses"):
            req = parse_responses(payload)
            reply = decide(self.tape, req)
            model = req.model or DEFAULT_MODEL
            if req.stream:
                return self._reply(req, reply, 200, frames=openai_responses.stream(reply, model))
            return self._reply(req, reply, 200, openai_responses.response(reply, model))
        found = _GEMINI.search(route)
        if found:
            model, action = found.group(1), found.group(2)
            streaming = action == "streamGenerateContent"
            req = parse_gemini(payload, model, stream=streaming)
            if action == "countTokens":
                reply = decide(self.tape, req, count_only=True)
                return self._reply(req, reply, 200, gemini.count_tokens(reply))
            reply = decide(self.tape, req)
            if not streaming:
                return self._reply(req, reply, 200, gemini.response(reply, model))
            chunks = gemini.chunks(reply, model)
            if parse_qs(query).get("alt") == ["sse"]:
                return self._reply(req, reply, 200, frames=(frame(c) for c in chunks))
            return self._reply(req, reply, 200, chunks)
        raise _Problem(404, f"no route for POST {route}", "not_found_error")

    def _get(self, route: str) -> _Answer:
        name = DEFAULT_MODEL
        if route.rstrip("/").endswith("/models"):
            if "/v1beta/" in route or "/v1alpha/" in route:
                return _Answer(
                    200, {"models": [_gemini_model(name)]}, record={"protocol": "models"}
                )
            listing = {
                "object": "list",
                "data": [_model(name)],
                "has_more": False,
                "first_id": name,
                "last_id": name,
            }
            return _Answer(200, listing, record={"protocol": "models"})
        found = re.search(r"/models/([^/:]+)$", route)
        if found:
            wanted = found.group(1)
            body = _gemini_model(wanted) if "/v1beta/" in route else _model(wanted)
            return _Answer(200, body, record={"protocol": "models", "model": wanted})
        raise _Problem(404, f"no route for GET {route}", "not_found_error")

    def _reply(
        self,
        req: ModelRequest,
        reply: Reply,
        status: int,
        body: Any = None,
        *,
        frames: Iterator[bytes] | Iterable[bytes] | None = None,
    ) -> _Answer:
        counting = reply.side == "count_tokens"
        usage = (
            Usage()
            if counting
            else Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
        )
        record = {
            "protocol": req.protocol,
            "model": req.model,
            "stream": req.stream,
            "conversation": reply.conversation,
            "turn": reply.turn,
            "side": reply.side is not None,
            "side_reason": reply.side,
            "unmatched": reply.unmatched,
            "past_end": reply.past_end,
            "usage": usage,
            "text": None if counting else reply.text,
            "tool_calls": [
                ToolCallRecord(
                    name=c.name,
                    tool=c.tape_tool,
                    kind=c.kind,
                    args=c.args,
                    offered=c.offered,
                    via=c.via,
                    namespace=c.namespace,
                )
                for c in reply.calls
            ],
        }
        return _Answer(status, body, frames, record)


def _model(name: str) -> dict[str, Any]:
    return {
        "id": name,
        "object": "model",
        "type": "model",
        "created": 0,
        "created_at": "1970-01-01T00:00:00Z",
        "owned_by": "axis-model-server",
        "display_name": "Scripted model (axis-model-server)",
    }


def _gemini_model(name: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "displayName": "Scripted model (axis-model-server)",
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }


def _json_body(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise _Problem(400, "the request has no JSON body")
    try:
        payload = json.loads(raw)
    except ValueError as error:
        raise _Problem(400, f"the request body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise _Problem(400, "the request body must be a JSON object")
    return payload


# ---------------------------------------------------------------------- HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # many agents may connect at once

    def __init__(self, address: tuple[str, int], owner: ScriptedModelServer) -> None:
        self.owner = owner
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, _Handler)

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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "axis-model-server"
    timeout = 300
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log replaces the access log."""

    def do_CONNECT(self) -> None:
        self.server.owner._trap("CONNECT", self.path, self._kept_headers())
        self._send_json(403, _error("forbidden", "axis-model-server refuses outside connections"))
        self.close_connection = True

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_HEAD(self) -> None:
        with contextlib.suppress(_Problem):
            self._read_body()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _kept_headers(self) -> dict[str, str]:
        return {k: str(self.headers[k]) for k in _KEPT_HEADERS if self.headers.get(k) is not None}

    def _handle(self, method: str) -> None:
        owner = self.server.owner
        path = self.path
        headers = self._kept_headers()
        if path.startswith(("http://", "https://")):
            parts = urlsplit(path)
            if not owner._is_self(parts.hostname or "", parts.port):
                with contextlib.suppress(_Problem):
                    self._read_body()
                owner._trap(method, path, headers)
                message = "axis-model-server refuses outside connections"
                self._send_json(403, _error("forbidden", message))
                self.close_connection = True
                return
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        started = time.time()
        base = {"timestamp": started, "method": method, "path": path, "headers": headers}
        try:
            raw = self._read_body()
            answer = owner._answer(method, path, raw)
            frames = list(answer.frames) if answer.frames is not None else None
        except _Problem as problem:
            owner._add(RequestRecord(**base, status=problem.status, error=str(problem)))
            self._send_json(problem.status, _error(problem.kind, str(problem)))
            return
        except Exception as error:  # a bug: answer 500 and keep serving
            message = f"{type(error).__name__}: {error}"
            owner._add(RequestRecord(**base, status=500, error=message))
            self._send_json(500, _error("api_error", message))
            return
        owner._add(RequestRecord(**base, status=answer.status, **answer.record))
        if frames is not None:
            self._send_sse(answer.status, frames)
        else:
            self._send_json(answer.status, answer.body)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                raise _Problem(400, "bad Content-Length") from None
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
            raise _Problem(400, f"cannot decode the {encoding} body: {error}") from None
        raise _Problem(415, f"unsupported Content-Encoding: {encoding}")

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

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("request-id", "req_scripted")
            self.end_headers()
            self.wfile.write(data)

    def _send_sse(self, status: int, frames: Iterable[bytes]) -> None:
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


def _error(kind: str, message: str) -> dict[str, Any]:
    """An error body both Anthropic (``type``) and OpenAI/Gemini clients can read."""
    return {"type": "error", "error": {"type": kind, "message": message, "code": kind}}
