"""`ateenv.v1alpha` ProcessService and FileSystemService over the process table and files.

Status codes follow upstream's guest daemon (agent-substrate/env `guest/process/service.go`
and its `service_test.go`): an empty `process_id` is INVALID_ARGUMENT before any lookup, an
unknown one NOT_FOUND; negative output offsets and an unsupported signal are
INVALID_ARGUMENT; signalling a process that has exited is FAILED_PRECONDITION; a
WriteProcessInput stream that names no process is INVALID_ARGUMENT.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping

from google.protobuf import descriptor_pool
from google.protobuf.timestamp_pb2 import Timestamp

from axis_eval.execute.guest import guest_pb2 as pb

from .errors import GuestError
from .files import FileAccess, FileWriter
from .grpc_wire import CallContext, GrpcError, Method, StatusCode
from .processes import STDOUT, GuestProcess, ProcessTable
from .reflection import ReflectionService

PACKAGE = "ateenv.v1alpha"
PROCESS_SERVICE = f"{PACKAGE}.ProcessService"
FILE_SERVICE = f"{PACKAGE}.FileSystemService"

_KINDS = {
    "not_found": StatusCode.NOT_FOUND,
    "invalid": StatusCode.INVALID_ARGUMENT,
    "precondition": StatusCode.FAILED_PRECONDITION,
    "permission": StatusCode.PERMISSION_DENIED,
}


@contextlib.contextmanager
def _grpc_status() -> Iterator[None]:
    """A ProcessError or FileError raised inside ends the call with its gRPC status."""
    try:
        yield
    except GuestError as exc:
        raise GrpcError(_KINDS.get(exc.kind, StatusCode.INTERNAL), exc.message) from exc


def _timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.seconds = int(seconds)
    ts.nanos = int((seconds - int(seconds)) * 1e9)
    return ts


def process_message(gp: GuestProcess) -> pb.Process:
    msg = pb.Process(process_id=gp.process_id, command=gp.command, pid=gp.pid)
    msg.started_at.CopyFrom(_timestamp(gp.started_at))
    if gp.exit_code is None:
        msg.state = pb.PROCESS_STATE_RUNNING
    else:
        msg.state = pb.PROCESS_STATE_EXITED
        msg.exit_code = gp.exit_code
        if gp.finished_at is not None:
            msg.finished_at.CopyFrom(_timestamp(gp.finished_at))
    return msg


class GuestServiceImpl:
    def __init__(self, table: ProcessTable, files: FileAccess) -> None:
        self.table = table
        self.files = files

    # -- ProcessService

    async def start_process(self, req: pb.StartProcessRequest, ctx: CallContext) -> pb.Process:
        timeout = 0.0
        if req.HasField("timeout"):
            timeout = req.timeout.seconds + req.timeout.nanos / 1e9
        with _grpc_status():
            gp = await self.table.start(
                list(req.command),
                cwd=req.cwd,
                env=dict(req.env),
                stdin=req.stdin,
                timeout=max(0.0, timeout),
            )
        return process_message(gp)

    def _lookup(self, process_id: str) -> GuestProcess:
        # Upstream checks for an empty id before looking it up.
        if not process_id:
            raise GrpcError(StatusCode.INVALID_ARGUMENT, "process_id cannot be empty")
        with _grpc_status():
            return self.table.get(process_id)

    async def get_process(self, req: pb.GetProcessRequest, ctx: CallContext) -> pb.Process:
        return process_message(self._lookup(req.process_id))

    async def stream_process_output(
        self, req: pb.StreamProcessOutputRequest, ctx: CallContext
    ) -> AsyncIterator[pb.ProcessOutput]:
        gp = self._lookup(req.process_id)
        if req.stdout_offset < 0 or req.stderr_offset < 0:
            raise GrpcError(StatusCode.INVALID_ARGUMENT, "offsets cannot be negative")
        async for item in self.table.output(
            gp,
            stdout_offset=req.stdout_offset,
            stderr_offset=req.stderr_offset,
            follow=req.follow,
        ):
            if item is None:
                out = pb.ProcessOutput()
                out.exit.CopyFrom(process_message(gp))
                yield out
            else:
                source, data = item
                yield (
                    pb.ProcessOutput(stdout=data)
                    if source == STDOUT
                    else pb.ProcessOutput(stderr=data)
                )

    async def write_process_input(
        self, requests: AsyncIterator[pb.WriteProcessInputRequest], ctx: CallContext
    ) -> pb.WriteProcessInputResponse:
        gp: GuestProcess | None = None
        total = 0
        with _grpc_status():
            async for req in requests:
                if gp is None:
                    if not req.process_id:
                        raise GrpcError(
                            StatusCode.INVALID_ARGUMENT,
                            "process_id is required on the first message",
                        )
                    gp = self.table.get(req.process_id)
                if req.data or req.close:
                    total += await self.table.write_input(gp, req.data, req.close)
        if gp is None:
            # An empty stream names no process (upstream: INVALID_ARGUMENT, not OK).
            raise GrpcError(
                StatusCode.INVALID_ARGUMENT, "process_id is required on the first message"
            )
        return pb.WriteProcessInputResponse(bytes_written=total)

    async def signal_process(self, req: pb.SignalProcessRequest, ctx: CallContext) -> pb.Process:
        # Upstream's order: the process first, then the signal, then whether it exited.
        gp = self._lookup(req.process_id)
        signum = int(req.signal)
        if signum == pb.SIGNAL_UNSPECIFIED or signum not in _SIGNALS:
            # Only the enum's own values: an open proto3 enum also carries unknown numbers.
            name = _SIGNALS.get(signum, str(signum))
            raise GrpcError(StatusCode.INVALID_ARGUMENT, f"unsupported signal {name}")
        with _grpc_status():
            return process_message(self.table.signal(gp.process_id, signum))

    # -- FileSystemService

    async def read_file(
        self, req: pb.ReadFileRequest, ctx: CallContext
    ) -> AsyncIterator[pb.ReadFileResponse]:
        with _grpc_status():
            for chunk in self.files.read_chunks(req.path, req.mode):
                yield pb.ReadFileResponse(chunk=chunk)

    async def write_file(
        self, requests: AsyncIterator[pb.WriteFileRequest], ctx: CallContext
    ) -> pb.WriteFileResponse:
        writer: FileWriter | None = None
        try:
            with _grpc_status():
                async for req in requests:
                    if writer is None:
                        writer = FileWriter(self.files, req.path, req.mode, req.seek_offset)
                    if req.chunk:
                        writer.write(req.chunk)
            if writer is None:
                raise GrpcError(StatusCode.INVALID_ARGUMENT, "no WriteFileRequest was sent")
            return pb.WriteFileResponse(bytes_written=writer.written)
        finally:
            if writer is not None:
                writer.close()

    def methods(self) -> dict[str, Method]:
        p, f = PROCESS_SERVICE, FILE_SERVICE
        table: dict[str, Method] = {
            f"/{p}/StartProcess": Method(pb.StartProcessRequest, pb.Process, self.start_process),
            f"/{p}/GetProcess": Method(pb.GetProcessRequest, pb.Process, self.get_process),
            f"/{p}/StreamProcessOutput": Method(
                pb.StreamProcessOutputRequest,
                pb.ProcessOutput,
                self.stream_process_output,
                server_streaming=True,
            ),
            f"/{p}/WriteProcessInput": Method(
                pb.WriteProcessInputRequest,
                pb.WriteProcessInputResponse,
                self.write_process_input,
                client_streaming=True,
            ),
            f"/{p}/SignalProcess": Method(pb.SignalProcessRequest, pb.Process, self.signal_process),
            f"/{f}/ReadFile": Method(
                pb.ReadFileRequest, pb.ReadFileResponse, self.read_file, server_streaming=True
            ),
            f"/{f}/WriteFile": Method(
                pb.WriteFileRequest, pb.WriteFileResponse, self.write_file, client_streaming=True
            ),
        }
        return table


_SIGNALS: Mapping[int, str] = {v.number: v.name for v in pb.Signal.DESCRIPTOR.values}


def reflection_for(methods: Mapping[str, Method]) -> ReflectionService:
    """Server reflection describing the services of ``methods`` (full method names)."""
    pool = descriptor_pool.Default()
    services = sorted({name.split("/")[1] for name in methods})
    files = [pool.FindServiceByName(service).file for service in services]
    return ReflectionService(services, files)


def method_names() -> list[str]:
    """Full method names served, from the proto's own service descriptors."""
    names: list[str] = []
    for service in pb.DESCRIPTOR.services_by_name.values():
        names += [f"/{service.full_name}/{m.name}" for m in service.methods]
    return names
