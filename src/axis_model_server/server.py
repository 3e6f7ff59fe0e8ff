"""The scripted model server: an HTTP server on 127.0.0.1 playing back a tape.

:class:`ScriptedModelServer` owns the lifecycle and the request log; its handler decides
what each request is (a trapped outside connection, or a request for :mod:`.routes` to
answer) and logs it. :mod:`.transport` does the HTTP reading and writing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import threading
import time
from collections.abc import Callable
from os import PathLike
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from axis_model_server.records import ConnectAttempt, RequestRecord, Usage, UsageTotals
from axis_model_server.routes import DEFAULT_MODEL, MODEL_PROTOCOLS, answer
from axis_model_server.tape import Tape, load_tape
from axis_model_server.transport import (
    PlumbingHandler,
    Problem,
    TrackingHTTPServer,
    error_body,
)

__all__ = ["DEFAULT_MODEL", "MODEL_PROTOCOLS", "ScriptedModelServer"]

_KEPT_HEADERS = ("user-agent", "originator")
_SELF_HOSTS = {"127.0.0.1", "localhost", "::1"}


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


class _HTTPServer(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], owner: ScriptedModelServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)


class _Handler(PlumbingHandler):
    server: _HTTPServer

    def do_CONNECT(self) -> None:
        self.server.owner._trap("CONNECT", self.path, self._kept_headers())
        self.refuse()

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _kept_headers(self) -> dict[str, str]:
        return {k: str(self.headers[k]) for k in _KEPT_HEADERS if self.headers.get(k) is not None}

    def _handle(self, method: str) -> None:
        owner = self.server.owner
        path = self.path
        headers = self._kept_headers()
        if path.startswith(("http://", "https://")):
            # Used as a plain HTTP proxy: only a URL naming this server itself is served.
            parts = urlsplit(path)
            if not owner._is_self(parts.hostname or "", parts.port):
                with contextlib.suppress(Problem):
                    self.read_body()
                owner._trap(method, path, headers)
                self.refuse()
                return
            path = parts.path + (f"?{parts.query}" if parts.query else "")
        started = time.time()
        base = {"timestamp": started, "method": method, "path": path, "headers": headers}
        try:
            raw = self.read_body()
            reply = answer(owner.tape, method, path, raw)
            frames = list(reply.frames) if reply.frames is not None else None
        except Problem as problem:
            owner._add(RequestRecord(**base, status=problem.status, error=str(problem)))
            self.send_json(problem.status, error_body(problem.kind, str(problem)))
            return
        except Exception as error:  # a bug: answer 500 and keep serving
            message = f"{type(error).__name__}: {error}"
            owner._add(RequestRecord(**base, status=500, error=message))
            self.send_json(500, error_body("api_error", message))
            return
        owner._add(RequestRecord(**base, status=reply.status, **reply.record))
        if frames is not None:
            self.send_sse(reply.status, frames)
        else:
            self.send_json(reply.status, reply.body)
