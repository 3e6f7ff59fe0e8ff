"""Agent Substrate guest services (`ateenv.v1alpha`) over h2c, for `spec.debug: true`.

The runner imports this module once it is serving and calls
``make_h2c_handler(GuestContext)``; its HTTP server then calls the returned
:class:`GuestServices` for every connection that opens with the HTTP/2 prior-knowledge
preface. Embedded use::

    guest = GuestServices(enabled=task.spec.debug, workspace=first_workspace_path)
    await guest(reader, writer, first_bytes)   # serves that connection until it closes
    ...
    await guest.aclose()                       # on shutdown: stops guest processes

(Guest processes still running when the interpreter exits are killed in any case.)

On that connection, a POST whose ``content-type`` starts with ``application/grpc`` is a
gRPC call. With ``enabled`` (the Task's ``spec.debug``) the calls of ProcessService
(StartProcess, GetProcess, StreamProcessOutput, WriteProcessInput, SignalProcess) and
FileSystemService (ReadFile, WriteFile) are served, with gRPC server reflection
(``grpc.reflection.v1`` and ``v1alpha`` ServerReflectionInfo, what ``grpcurl`` uses), as
upstream's guest daemon registers it; without it every call gets ``UNIMPLEMENTED``.
Any other HTTP/2 request goes to ``http_fallback`` (the runner's own routes) or gets
upstream's ``404 page not found``.

This module is cheap to import: hyper-h2 and protobuf load on the first h2c connection
(protobuf only when ``enabled``), so ``/healthz`` never waits for them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ax_task_runner._guest.h2grpc import GrpcH2Connection, HttpResponse, Method
    from ax_task_runner._guest.processes import ProcessTable
    from ax_task_runner.server import GuestContext

__all__ = [
    "DISABLED_MESSAGE",
    "GRPC_METHODS",
    "REFLECTION_METHODS",
    "GuestServices",
    "HttpFallback",
    "make_h2c_handler",
]

DISABLED_MESSAGE = "guest services are disabled; set spec.debug: true on the Task to enable ax ssh"

# Full method names served when enabled (kept in step with the proto by a test).
GRPC_METHODS = (
    "/ateenv.v1alpha.ProcessService/StartProcess",
    "/ateenv.v1alpha.ProcessService/GetProcess",
    "/ateenv.v1alpha.ProcessService/StreamProcessOutput",
    "/ateenv.v1alpha.ProcessService/WriteProcessInput",
    "/ateenv.v1alpha.ProcessService/SignalProcess",
    "/ateenv.v1alpha.FileSystemService/ReadFile",
    "/ateenv.v1alpha.FileSystemService/WriteFile",
)
# Served beside them when enabled (bidirectional streams).
REFLECTION_METHODS = (
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
)

# (method, path with query, request headers) -> (status, headers, body), for plain HTTP/2.
HttpFallback = Callable[
    [str, str, Mapping[str, str]], Awaitable[tuple[int, list[tuple[str, str]], bytes]]
]


class GuestServices:
    """The runner's ``h2c_handler``: gRPC guest services multiplexed on the HTTP port.

    Parameters:
        enabled: the Task's ``spec.debug``. False answers every gRPC call UNIMPLEMENTED.
        workspace: the first workspace path: default cwd of started processes and root
            of relative file paths.
        env: base environment of started processes (default: the runner's ``os.environ``
            at start time, which holds ``AX_METADATA_URL`` and ``spec.env``); the
            request's ``env`` is added on top.
        confine_files: keep ReadFile/WriteFile inside ``file_roots`` (symlinks resolved).
            Off allows any path, as process execution already does.
        file_roots: the folders files are confined to (default: ``workspace`` alone).
            Relative paths resolve against ``workspace`` either way.
        http_fallback: serves non-gRPC HTTP/2 requests (otherwise 404).
    """

    def __init__(
        self,
        *,
        enabled: bool,
        workspace: str | os.PathLike[str],
        env: Mapping[str, str] | None = None,
        confine_files: bool = True,
        file_roots: Sequence[str | os.PathLike[str]] | None = None,
        http_fallback: HttpFallback | None = None,
        output_retain_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self.enabled = enabled
        self.workspace = Path(workspace)
        self._env = env
        self._confine = confine_files
        self._file_roots = [Path(r) for r in file_roots] if file_roots else [self.workspace]
        self._http_fallback = http_fallback
        self._retain = output_retain_bytes
        self._methods: Mapping[str, Method] | None = None
        self._table: ProcessTable | None = None
        self._connections: set[GrpcH2Connection] = set()
        self._closed = False

    # The handler signature the runner's server calls.
    async def __call__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first_bytes: bytes
    ) -> None:
        await self.serve_connection(reader, writer, first_bytes)

    async def serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first_bytes: bytes
    ) -> None:
        from ax_task_runner._guest.h2grpc import GrpcH2Connection

        if self._closed:
            writer.close()
            return
        methods = self._load_methods() if self.enabled else {}
        connection = GrpcH2Connection(
            reader,
            writer,
            methods=methods,
            enabled=self.enabled,
            disabled_message=DISABLED_MESSAGE,
            http_fallback=self._fallback() if self._http_fallback is not None else None,
        )
        self._connections.add(connection)
        try:
            await connection.serve(first_bytes)
        finally:
            self._connections.discard(connection)

    def _fallback(self) -> Callable[[str, str, Mapping[str, str]], Awaitable[HttpResponse]]:
        from ax_task_runner._guest.h2grpc import HttpResponse

        fallback = self._http_fallback
        assert fallback is not None

        async def call(method: str, path: str, headers: Mapping[str, str]) -> HttpResponse:
            status, hdrs, body = await fallback(method, path, headers)
            return HttpResponse(status, list(hdrs), body)

        return call

    def _load_methods(self) -> Mapping[str, Method]:
        if self._methods is None:
            from ax_task_runner._guest.files import FileAccess
            from ax_task_runner._guest.processes import ProcessTable
            from ax_task_runner._guest.services import GuestServiceImpl, reflection_for

            self._table = ProcessTable(
                workspace=self.workspace, env=self._env, output_retain_bytes=self._retain
            )
            files = FileAccess(self.workspace, confine=self._confine, roots=self._file_roots)
            impl = GuestServiceImpl(self._table, files)
            methods = impl.methods()
            # Server reflection, as upstream's guest daemon registers it (grpcurl list…).
            methods.update(reflection_for(methods).methods())
            self._methods = methods
        return self._methods

    def preload(self) -> None:
        """Load now what the first connection and the first calls would load (hyper-h2,
        protobuf and the method table when enabled, the process-control package a first
        StartProcess uses), for a server that listens only once it can answer at once
        (``--guest-services-only``). Nothing is served differently."""
        from ax_task_runner._guest import h2grpc  # noqa: F401

        if self.enabled:
            self._load_methods()
            from axis_eval.execute.process import spawning  # noqa: F401

    def pids(self) -> set[int]:
        """OS pids of running guest processes (a PID-1 reaper must not reap these)."""
        return self._table.pids() if self._table is not None else set()

    async def aclose(self, grace: float = 2.0) -> None:
        """Close open h2c connections and stop running guest processes (TERM, then KILL)."""
        self._closed = True
        await asyncio.gather(*(c.shutdown() for c in list(self._connections)))
        if self._table is not None:
            await self._table.aclose(grace)


def make_h2c_handler(context: GuestContext) -> GuestServices:
    """The runner's seam (``ax_task_runner.runner``): guest services for its h2c connections.

    ``context.debug`` turns the services on; ``context.workspace`` is the default cwd and
    the root of relative file paths; ``context.file_roots`` (default: the workspace) and
    ``context.confine_files`` say which paths the files service may use; ``context.env``
    (kept up to date by the runner; empty with ``--guest-env empty``) is the base
    environment of started processes. The server already counts each h2c connection in
    ``context.activity``.
    """
    return GuestServices(
        enabled=context.debug,
        workspace=context.workspace,
        env=context.env,
        confine_files=getattr(context, "confine_files", True),
        file_roots=getattr(context, "file_roots", None) or None,
        http_fallback=getattr(context, "http_fallback", None),
    )
