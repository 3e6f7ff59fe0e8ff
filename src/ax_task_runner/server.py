"""HTTP on one port or Unix socket: health, readiness, metadata, status; the h2c hand-off.

HTTP/1.1 on asyncio streams. A connection whose first bytes are the HTTP/2 prior-knowledge
preface (``PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n``, what gRPC clients send over h2c) is
handed, with the bytes already read, to the optional ``h2c_handler`` (the guest gRPC
services); without one it is closed. Bodies and status codes follow upstream's Go server.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import socket
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs, quote, unquote

from ax_task_runner.errors import ServeError
from ax_task_runner.logs import event

__all__ = [
    "H2C_PREFACE",
    "Activity",
    "GuestContext",
    "H2cHandler",
    "MetadataServer",
    "ServerState",
    "http_date",
    "metadata_url",
]

log = logging.getLogger(__name__)

H2C_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2cHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Awaitable[None]]
"""``handler(reader, writer, already_read)``: serve one h2c connection, return when done."""

TASK_PATH = "/metadata/v1alpha1/ax/task"
WORKSPACES_PATH = "/metadata/v1alpha1/ax/workspaces"
STATUS_PATH = "/metadata/v1alpha1/ax/status"
_MAX_HEAD_BYTES = 64 * 1024
_MAX_BODY_BYTES = 1024 * 1024
_FIRST_BYTES_S = 30.0
_KEEP_ALIVE_S = 120.0
_RESUME_GAP_S = 5.0
_TEXT = "text/plain; charset=utf-8"


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(when: float | None = None) -> str:
    """An HTTP ``Date`` (RFC 9110 IMF-fixdate, ``Sun, 06 Nov 1994 08:49:37 GMT``), as
    ``email.utils.formatdate(usegmt=True)`` writes it: the ``email`` package is not
    loaded for it (a few ms of every start)."""
    t = time.gmtime(when)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year:04d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )


def metadata_url(unix_socket: str | None, host: str | None, port: int | None) -> str:
    """``AX_METADATA_URL``: ``http://127.0.0.1:<port>`` (or the address listened on); on a
    Unix socket ``http+unix://<the path, percent-encoded>`` (the scheme of
    requests-unixsocket and httpie-unixsocket; ``curl --unix-socket PATH`` takes it as the
    path)."""
    if unix_socket:
        return f"http+unix://{quote(unix_socket, safe='')}"
    host = host or ""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


class Activity:
    """Use of the task that should keep it awake: guest-service (h2c) connections.

    The runner's own endpoints are polled by the control plane and never count.
    ``idle_seconds`` restarts when the process was frozen and thawed (a wall-clock jump).
    """

    def __init__(self) -> None:
        self.in_flight = 0
        self._last = time.monotonic()
        self._wall = time.time()

    def begin(self) -> None:
        """A request or stream opened."""
        self.in_flight += 1
        self._last = time.monotonic()

    def end(self) -> None:
        """It closed."""
        self.in_flight = max(self.in_flight - 1, 0)
        self._last = time.monotonic()

    def reset(self) -> None:
        """Restart the idle clock without a request (after a resume)."""
        self._last = time.monotonic()

    def tick(self) -> None:
        """Called every second: a wall-clock gap means we were suspended and resumed."""
        now = time.time()
        if now - self._wall > _RESUME_GAP_S:
            event(log, logging.INFO, "runner was suspended and resumed; restarting the idle clock")
            self.reset()
        self._wall = now

    def idle_seconds(self) -> int:
        """Whole seconds since the last activity ended; 0 while any is open."""
        return 0 if self.in_flight else int(time.monotonic() - self._last)


@dataclass
class ServerState:
    """What the endpoints show; the runner updates it as the run goes on."""

    task_yaml: str | None = None
    """The Task as served (secrets redacted); None gives upstream's 404."""
    workspaces_yaml: str | None = None
    """The matched Workspaces as a YAML stream; None gives upstream's 404."""
    workspace_ready: bool = False
    busy: bool = False
    """Workspace preparation or a goal bootstrap is under way."""
    exited: bool = False
    exit_code: int = 0
    activity: Activity = field(default_factory=Activity)


@dataclass(frozen=True)
class GuestContext:
    """What a guest-services factory gets (see docs/runner.md, "The h2c seam")."""

    debug: bool
    """``spec.debug``: serve the services only when True (answer UNIMPLEMENTED otherwise)."""
    workspace: str
    """The first workspace: default cwd and root for file operations."""
    env: dict[str, str]
    """Environment for started processes: the runner's, ``AX_METADATA_URL``, ``spec.env``
    (empty with ``guest_env="empty"``: a process then gets exactly its request's ``env``)."""
    activity: Activity
    """Count calls with ``begin()``/``end()`` for the status endpoint, if wanted."""
    http_fallback: (
        Callable[[str, str, Mapping[str, str]], Awaitable[tuple[int, list[tuple[str, str]], bytes]]]
        | None
    ) = None
    """Serves plain (non-gRPC) HTTP/2 requests with the same routes as HTTP/1.1."""
    file_roots: tuple[str, ...] = ()
    """Folders the FileSystemService may use; empty: ``workspace`` only."""
    confine_files: bool = True
    """False: the FileSystemService may use any path."""


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes
    content_type: str = _TEXT
    nosniff: bool = False


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


def _error(status: int, message: str) -> _Response:
    """Go's ``http.Error``: the message and a newline, plain text, nosniff."""
    return _Response(status, (message + "\n").encode(), _TEXT, nosniff=True)


class MetadataServer:
    """Serves :class:`ServerState` over HTTP/1.1 and hands h2c connections on."""

    def __init__(
        self,
        state: ServerState,
        *,
        readiness: Literal["workspace", "serving"] = "workspace",
        h2c_handler: H2cHandler | None = None,
    ) -> None:
        self.state = state
        self.readiness = readiness
        self.h2c_handler = h2c_handler
        self.port: int | None = None
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._unix_path: str | None = None

    async def start(self, host: str | None, port: int) -> int:
        """Listen on ``host`` (None or "" = every interface) and ``port``; the bound port.

        Raises:
            ServeError: the address cannot be used.
        """
        try:
            self._server = await self._listen(host or None, port)
        except OSError as exc:
            if host:
                raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
            try:  # "every interface" where IPv6 is disabled: IPv4 only
                self._server = await self._listen("0.0.0.0", port)
            except OSError:
                raise ServeError(f"cannot listen on :{port}: {exc.strerror or exc}") from exc
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        return self.port

    async def start_unix(self, path: str) -> None:
        """Listen on the Unix socket ``path`` instead of TCP (a stale socket file there is
        replaced; the file is removed again by :meth:`close`).

        Raises:
            ServeError: the socket cannot be made there.
        """
        try:
            sock = _listening_unix_socket(path)
            self._server = await asyncio.start_unix_server(
                self._accept, sock=sock, limit=_MAX_HEAD_BYTES
            )
        except (OSError, ValueError) as exc:  # ValueError: a path too long for sun_path
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise ServeError(f"cannot listen on Unix socket {path}: {reason}") from exc
        self._unix_path = path
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _listen(self, host: str | None, port: int) -> asyncio.Server:
        return await asyncio.start_server(
            self._accept, host, port, reuse_address=True, limit=_MAX_HEAD_BYTES
        )

    async def close(self, timeout_s: float = 2.0) -> None:
        """Stop listening and end every open connection (h2c handlers are cancelled)."""
        if self._ticker is not None:
            self._ticker.cancel()
        if self._server is not None:
            self._server.close()
        tasks = list(self._connections)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=0.2)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=timeout_s)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout_s)
        if self._unix_path is not None:
            # Python 3.11's unix server leaves its socket file behind.
            with contextlib.suppress(OSError):
                os.unlink(self._unix_path)
            self._unix_path = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.state.activity.tick()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer))
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await self._sniff(reader)
            if first and first.startswith(H2C_PREFACE):
                await self._h2c(reader, writer, first)
            elif first:
                await self._http1(reader, writer, first)
        except (
            ConnectionError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass
        except Exception as exc:  # a bug must not take the server down
            event(log, logging.ERROR, "connection failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _sniff(self, reader: asyncio.StreamReader) -> bytes:
        """Read until the bytes either are the h2c preface or cannot become it."""
        buf = b""
        while len(buf) < len(H2C_PREFACE) and H2C_PREFACE.startswith(buf):
            chunk = await asyncio.wait_for(reader.read(len(H2C_PREFACE) - len(buf)), _FIRST_BYTES_S)
            if not chunk:
                return b""
            buf += chunk
        return buf

    async def _h2c(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: bytes
    ) -> None:
        if self.h2c_handler is None:
            return  # no guest services in this build: close
        activity = self.state.activity
        activity.begin()
        try:
            await self.h2c_handler(reader, writer, first)
        finally:
            activity.end()

    async def _read_head(
        self, reader: asyncio.StreamReader, buf: bytes, timeout_s: float
    ) -> tuple[bytes | None, bytes]:
        while b"\r\n\r\n" not in buf:
            if len(buf) > _MAX_HEAD_BYTES:
                raise _TooLarge
            chunk = await asyncio.wait_for(reader.read(65536), timeout_s)
            if not chunk:
                return None, b""
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        return head, rest

    async def _http1(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, buf: bytes
    ) -> None:
        timeout_s = _FIRST_BYTES_S
        while True:
            try:
                head, buf = await self._read_head(reader, buf, timeout_s)
            except _TooLarge:
                await self._send(
                    writer, "GET", _error(431, "431 Request Header Fields Too Large"), False
                )
                return
            if head is None:
                return
            parsed = _parse_head(head)
            if parsed is None:
                await self._send(writer, "GET", _error(400, "400 Bad Request"), False)
                return
            method, target, version, headers = parsed
            if headers.get("expect", "").lower() == "100-continue":
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            buf, keep = await _skip_body(reader, headers, buf)
            connection = headers.get("connection", "").lower()
            keep = keep and (
                "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
            )
            await self._send(writer, method, self.respond(target), keep)
            if not keep:
                return
            timeout_s = _KEEP_ALIVE_S

    async def respond_h2(
        self, method: str, target: str, headers: Mapping[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """The same routes for a plain HTTP/2 request (the h2c connection's fallback)."""
        response = self.respond(target)
        extra = [("x-content-type-options", "nosniff")] if response.nosniff else []
        body = b"" if method == "HEAD" else response.body
        return response.status, [("content-type", response.content_type), *extra], body

    def respond(self, target: str) -> _Response:
        """The response to a request for ``target`` (any method; HEAD drops the body)."""
        raw_path, _, query = target.partition("?")
        path = unquote(raw_path)
        state = self.state
        if path == "/healthz":
            return _Response(200, b"ok\n")
        if path == "/readyz":
            checks = parse_qs(query).get("check", [])
            waits = self.readiness == "workspace" or "workspace" in checks
            if waits and not state.workspace_ready:
                return _error(503, "workspace initializing")
            return _Response(200, b"ok\n")
        if path == TASK_PATH:
            if state.task_yaml is None:
                return _error(404, "task metadata not available")
            return _Response(200, state.task_yaml.encode(), "application/yaml")
        if path == WORKSPACES_PATH:
            if state.workspaces_yaml is None:
                return _error(404, "workspace metadata not available")
            return _Response(200, state.workspaces_yaml.encode(), "application/yaml")
        if path == STATUS_PATH:
            body = {
                "idleSeconds": state.activity.idle_seconds(),
                "inFlight": state.activity.in_flight,
                "busy": state.busy,
                "exited": state.exited,
                "exitCode": state.exit_code,
            }
            return _Response(200, (json.dumps(body) + "\n").encode(), "application/json")
        return _error(404, "404 page not found")

    async def _send(
        self, writer: asyncio.StreamWriter, method: str, response: _Response, keep: bool
    ) -> None:
        headers = [
            f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            f"Date: {http_date()}",
        ]
        if response.nosniff:
            headers.append("X-Content-Type-Options: nosniff")
        if not keep:
            headers.append("Connection: close")
        writer.write(("\r\n".join(headers) + "\r\n\r\n").encode("latin-1"))
        if method != "HEAD":
            writer.write(response.body)
        await writer.drain()


class _TooLarge(Exception):
    pass


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]] | None:
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        return None
    if not version.startswith("HTTP/1.") or not target.startswith(("/", "*", "http")):
        return None
    if target.startswith("http"):  # absolute form: keep the path
        target = "/" + target.split("://", 1)[-1].partition("/")[2]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            return None
        headers[name.strip().lower()] = value.strip()
    return method, target, version, headers


async def _skip_body(
    reader: asyncio.StreamReader, headers: dict[str, str], buf: bytes
) -> tuple[bytes, bool]:
    """Discard the request body (no endpoint reads one); ``(leftover, keep_alive)``."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return b"", False  # answered, then closed: simpler than de-chunking
    try:
        length = int(headers.get("content-length", "0") or "0")
    except ValueError:
        return b"", False
    if length < 0 or length > _MAX_BODY_BYTES:
        return b"", False
    while len(buf) < length:
        chunk = await asyncio.wait_for(reader.read(min(length - len(buf), 65536)), _FIRST_BYTES_S)
        if not chunk:
            return b"", False
        buf += chunk
    return buf[length:], True


_SUN_PATH_MAX = 108
"""Linux's ``sun_path``, its terminating NUL included."""


def _listening_unix_socket(path: str) -> socket.socket:
    """A Unix socket already listening when ``path`` appears: bound under a temporary name
    beside it, listening, then renamed into place (a stale file there is replaced). A
    client that connects as soon as the file exists never meets a bound socket that does
    not listen yet (refused), however the runner is scheduled between the two calls."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise OSError(errno.EEXIST, "a file that is not a socket is there", path)
    temporary = f"{path}~"
    if len(os.fsencode(temporary)) >= _SUN_PATH_MAX:  # no room for the temporary name
        temporary = path
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)  # a stale socket (the final path is replaced by the rename)
        sock.bind(temporary)
        sock.listen(128)
        if temporary != path:
            os.rename(temporary, path)  # noqa: PTH104 -- strings, as asyncio takes them
    except BaseException:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sock.setblocking(False)
    return sock
