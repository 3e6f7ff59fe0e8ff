"""The client side of an ACP session: permissions, file access, and the stdio transport.

:class:`AcpClient` is what the ``acp`` package calls for the agent's own requests: it
grants every permission and reads and writes files. :class:`StdioTransport` carries
JSON-RPC messages over the agent's pipes (the supervisor spawned it); every message
goes through a :class:`MessageSink` first (the session records it and maps its updates).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import acp
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from axis_eval._util.beneath import DIR_FLAGS, READ_FLAGS, WRITE_FLAGS, open_regular, read_at_most
from axis_eval.adapters._scrub import scrub
from axis_eval.config.actions import McpHttpServer, McpServer

__all__ = ["AcpClient", "MessageSink", "StdioTransport", "acp_mcp_servers", "pick_option"]


class MessageSink(Protocol):
    """Where the transport reports what goes over the wire."""

    def record(self, direction: str, message: dict[str, Any]) -> None:
        """A message sent to the agent (``client->agent``)."""

    def incoming(self, message: dict[str, Any]) -> bool:
        """A message from the agent; False when the ``acp`` package need not see it."""

    def non_json(self, text: str) -> None:
        """A stdout line that is not a JSON-RPC message."""

    def warn(self, key: str, message: str) -> None:
        """Something odd that does not end the session."""


def acp_mcp_servers(servers: Mapping[str, McpServer]) -> list[HttpMcpServer | McpServerStdio]:
    """MCP servers in ACP's ``session/new`` form: http ``{type, name, url, headers:[{name,
    value}]}``, stdio ``{name, command, args, env:[{name, value}]}``."""
    out: list[HttpMcpServer | McpServerStdio] = []
    for name, server in servers.items():
        if isinstance(server, McpHttpServer):
            headers = [HttpHeader(name=k, value=v) for k, v in server.headers.items()]
            out.append(HttpMcpServer(type="http", name=name, url=server.url, headers=headers))
        else:
            env = [EnvVariable(name=k, value=v) for k, v in server.env.items()]
            out.append(
                McpServerStdio(name=name, command=server.command, args=list(server.args), env=env)
            )
    return out


def pick_option(options: list[PermissionOption]) -> PermissionOption | None:
    """``allow_once``, else ``allow_always``, else the first option.

    AXIS picks ``allow_always`` first, but agents persist that choice in the workspace
    (claude-agent-acp writes ``.claude/settings.local.json``, Qwen Code
    ``.qwen/settings.json``); granting each call once leaves the workspace to the task.
    """
    for kind in ("allow_once", "allow_always"):
        for option in options:
            if option.kind == kind:
                return option
    return options[0] if options else None


MAX_READ_BYTES = 16 * 1024 * 1024
"""The largest file ``fs/read_text_file`` reads for an agent."""


class AcpClient:
    """The client side of the protocol: grants every permission, reads and writes files.

    The files are the job's own: a path must resolve (symlinks followed) inside one of
    ``roots`` (the workspace, the job's HOME and TMPDIR). The harness serves these requests
    on the host, outside any sandbox, so an agent must not use it to reach what its sandbox
    hides (or, under ``none``, to write where its job has no business). The resolved path is
    then opened from the root one folder at a time without following a link, so a folder
    the agent swaps for a link between the check and the open leads nowhere; only regular
    files are read or written (a FIFO would block the run), off the event loop.
    """

    def __init__(self, roots: Sequence[str] = ()) -> None:
        # Each root's own name is taken as it is, never resolved: the agent may have made it
        # a link by now (it can write in the job's folder), and a resolved root would then
        # be wherever the link leads. Its folder above is the harness's, resolved.
        self._roots = [_own_name(r) for r in roots if r]
        self._one_at_a_time = asyncio.Semaphore(1)  # a read's bytes held once, not per task

    def _confined(self, path: str) -> tuple[str, str]:
        """``(root, resolved path)`` for a path the agent may use."""
        if not Path(path).is_absolute():
            raise acp.RequestError.invalid_params({"path": path, "details": "not absolute"})
        try:
            real = os.path.realpath(path)
        except ValueError as exc:  # a NUL in it
            raise acp.RequestError.invalid_params({"path": path, "details": str(exc)}) from exc
        for root in self._roots:
            if real.startswith(root + os.sep):
                return root, real
        raise acp.RequestError.invalid_params(
            {"path": path, "details": "outside the job's workspace, HOME and TMPDIR"}
        )

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        pick = pick_option(options)
        if pick is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=pick.option_id)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Unused: updates are read from the raw messages by the transport."""

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        root, real = self._confined(path)
        try:
            async with self._one_at_a_time:
                text = await asyncio.to_thread(_read_text, root, real)
        except FileNotFoundError as exc:
            raise acp.RequestError.resource_not_found(path) from exc
        except OSError as exc:
            raise acp.RequestError.internal_error({"path": path, "details": str(exc)}) from exc
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            end = None if limit is None else start + limit
            text = "".join(lines[start:end])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        root, real = self._confined(path)
        try:
            data = content.encode("utf-8")
        except UnicodeError as exc:  # a lone surrogate: refused before the file is touched
            raise acp.RequestError.invalid_params({"path": path, "details": str(exc)}) from exc
        try:
            async with self._one_at_a_time:
                await asyncio.to_thread(_write_bytes, root, real, data)
        except OSError as exc:
            raise acp.RequestError.internal_error({"path": path, "details": str(exc)}) from exc
        return WriteTextFileResponse()


def _own_name(root: str) -> str:
    """``root`` with the folder above it resolved and its own name kept as it is."""
    above, name = os.path.split(root.rstrip("/"))
    return os.path.join(os.path.realpath(above or "/"), name)


def _read_text(root: str, real: str) -> str:
    fd = _open_beneath(root, real, READ_FLAGS)
    try:
        data = read_at_most(fd, MAX_READ_BYTES)
    finally:
        os.close(fd)
    if data is None:
        raise OSError(errno.EFBIG, f"larger than {MAX_READ_BYTES} bytes", real)
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as a text-mode read gives


def _write_bytes(root: str, real: str, data: bytes) -> None:
    fd = _open_beneath(root, real, WRITE_FLAGS, create=True)
    try:
        os.ftruncate(fd, 0)
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def _open_beneath(root: str, real: str, flags: int, *, create: bool = False) -> int:
    """The regular file ``real`` (resolved, inside ``root``), reached from ``root`` one
    folder at a time without following a link (``create``: missing folders made)."""
    top = os.open(root, DIR_FLAGS)
    try:
        return open_regular(top, Path(os.path.relpath(real, root)).parts, flags, create=create)
    finally:
        os.close(top)


class StdioTransport:
    """An ``acp`` message transport (newline-delimited JSON) over the agent's stdio pipes."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sink: MessageSink
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.sink = sink

    async def send(self, message: dict[str, Any]) -> None:
        self.sink.record("client->agent", message)
        # ASCII, so always encodable; default=str, as an answer can quote the agent's own
        # request back (a validation error's context holds exception objects)
        data = json.dumps(message, separators=(",", ":"), default=str) + "\n"
        self.writer.write(data.encode("ascii"))
        await self.writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self.reader.readline()
            except ValueError:  # a line longer than the reader's limit: skip it
                self.sink.warn("stdout", "the agent printed a line too long to read; skipped")
                continue
            if not line:
                return None
            message = self.take(line)
            if message is not None:
                return message

    def take(self, line: bytes) -> dict[str, Any] | None:
        """One stdout line: reported to the sink; returned when the ``acp`` package is to
        see it (None for a blank line, a line that is not a JSON-RPC object, a message the
        sink keeps to itself, or one the package could not digest)."""
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return None
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict):
            self.sink.non_json(text)
            return None
        scrubbed = scrub(message)
        if problem := scrubbed.describe():
            self.sink.warn("stdout", f"an agent message was kept with {problem}")
        message = scrubbed.value
        wanted = self.sink.incoming(message)
        return _digestible(message, self.sink) if wanted else None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


def _digestible(message: dict[str, Any], sink: MessageSink) -> dict[str, Any] | None:
    """``message`` in a shape the ``acp`` package's receive loop survives, else None.

    The package looks a response's ``id`` up in a dict, then calls ``.get`` on its
    ``error``. An id that is a list or an object raises TypeError in its receive loop, which
    drops the connection: such a response is left out (its id cannot be ours). An error
    that is a string or a list raises AttributeError after the pending request was taken
    off its table, so that request would wait until the time limit: it becomes an internal
    error that says what the agent sent. A request whose method is not a string would be
    logged with a traceback: its method is made a string, so it is answered "Method not
    found".
    """
    method = message.get("method")
    if method is not None:
        if not isinstance(method, str):  # the package answers "Method not found" to it
            return {**message, "method": f"{method!r:.100}"}  # instead of a logged TypeError
        return message  # a request: the package answers it
    rid = message.get("id")
    if rid is not None and not isinstance(rid, int | float | str):
        sink.warn(
            "protocol",
            f"the agent sent a response whose id is not a number or string: {rid!r:.100}",
        )
        return None
    error = message.get("error")
    if "result" not in message and error and not isinstance(error, dict):
        detail = f"the agent sent a malformed error: {error!r:.200}"
        sink.warn("protocol", detail)
        return {**message, "error": {"code": -32603, "message": detail}}
    return message
