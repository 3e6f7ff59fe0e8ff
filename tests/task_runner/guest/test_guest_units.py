"""GuestServices in-process (a thread's event loop) and the proto contract, no runner."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc
import h2.config
import h2.connection
import h2.events
import pytest

from ax_task_runner import supervisor
from ax_task_runner._guest.grpc_wire import (
    MAX_MESSAGE_BYTES,
    GrpcError,
    StatusCode,
    cut_messages,
    parse_timeout,
    trailers,
)
from ax_task_runner._guest.processes import OutputSpool
from ax_task_runner._guest.services import method_names
from ax_task_runner.guest_grpc import GRPC_METHODS, GuestServices
from axis_eval.execute.guest import guest_pb2 as pb
from axis_eval.execute.process import children

from .client import GuestClient

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
pytestmark = pytest.mark.timeout(60)


class LoopThread:
    """An event loop in a thread with a tiny front end that hands h2c to the guest."""

    def __init__(self, guest: GuestServices) -> None:
        self.guest = guest
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: asyncio.Server | None = None
        self.port = self.call(self._start())

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    async def _start(self) -> int:
        async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            first = await reader.readexactly(len(PREFACE))
            if first == PREFACE:
                await self.guest(reader, writer, first)
            else:
                writer.close()

        self.server = await asyncio.start_server(on_conn, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    def close(self) -> None:
        async def stop() -> None:
            await self.guest.aclose()
            assert self.server is not None
            self.server.close()

        self.call(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[LoopThread]:
    server = LoopThread(GuestServices(enabled=True, workspace=tmp_path))
    yield server
    server.close()


def test_method_table_matches_the_proto() -> None:
    assert sorted(GRPC_METHODS) == sorted(method_names())
    from ax_task_runner._guest.files import FileAccess
    from ax_task_runner._guest.processes import ProcessTable
    from ax_task_runner._guest.services import GuestServiceImpl

    impl = GuestServiceImpl(ProcessTable(workspace=Path("/")), FileAccess(Path("/")))
    table = impl.methods()
    for service in pb.DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            served = table[f"/{service.full_name}/{method.name}"]
            assert served.client_streaming == method.client_streaming, method.name
            assert served.server_streaming == method.server_streaming, method.name
            assert served.request_type().DESCRIPTOR is method.input_type
            assert served.response_type().DESCRIPTOR is method.output_type


def test_wire_contract_field_numbers() -> None:
    """The numbers `ax` relies on (agent-substrate/env ateenv.v1alpha guest.proto)."""
    expected = {
        "Process": {
            "process_id": 1, "command": 2, "pid": 3, "state": 4, "exit_code": 5,
            "started_at": 6, "finished_at": 7,
        },
        "StartProcessRequest": {"command": 1, "cwd": 2, "env": 3, "stdin": 4, "timeout": 5},
        "GetProcessRequest": {"process_id": 1},
        "StreamProcessOutputRequest": {
            "process_id": 1, "stdout_offset": 2, "stderr_offset": 3, "follow": 4,
        },
        "ProcessOutput": {"stdout": 1, "stderr": 2, "exit": 3},
        "WriteProcessInputRequest": {"process_id": 1, "data": 2, "close": 3},
        "WriteProcessInputResponse": {"bytes_written": 1},
        "SignalProcessRequest": {"process_id": 1, "signal": 2},
        "ReadFileRequest": {"path": 1, "mode": 2},
        "ReadFileResponse": {"chunk": 1},
        "WriteFileRequest": {"path": 1, "mode": 2, "seek_offset": 3, "chunk": 4},
        "WriteFileResponse": {"bytes_written": 1},
    }  # fmt: skip
    assert pb.DESCRIPTOR.package == "ateenv.v1alpha"
    for name, fields in expected.items():
        message = pb.DESCRIPTOR.message_types_by_name[name]
        assert {f.name: f.number for f in message.fields} == fields, name
    assert [o.name for o in pb.DESCRIPTOR.message_types_by_name["ProcessOutput"].oneofs] == [
        "output"
    ]
    assert pb.PROCESS_STATE_RUNNING == 1 and pb.PROCESS_STATE_EXITED == 2
    for name, number in (("HUP", 1), ("INT", 2), ("QUIT", 3), ("KILL", 9), ("TERM", 15)):
        assert pb.Signal.Value(f"SIGNAL_{name}") == number


def test_import_is_light_and_disabled_never_loads_protobuf(tmp_path: Path) -> None:
    code = (
        "import sys, asyncio\n"
        "import ax_task_runner.guest_grpc as g\n"
        "print('h2' in sys.modules, 'google.protobuf' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["False", "False"]


def test_disabled_answers_unimplemented_without_protobuf(tmp_path: Path) -> None:
    server = LoopThread(GuestServices(enabled=False, workspace=tmp_path))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            with pytest.raises(grpc.RpcError) as info:
                GuestClient(channel).get(pb.GetProcessRequest(process_id="x"), timeout=10)
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
            # An unknown service too.
            other = channel.unary_unary("/some.Other/Method")
            with pytest.raises(grpc.RpcError) as info:
                other(b"", timeout=10)
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.close()


def test_unknown_method_and_gzip_requests(served: LoopThread, tmp_path: Path) -> None:
    with grpc.insecure_channel(
        f"127.0.0.1:{served.port}", compression=grpc.Compression.Gzip
    ) as channel:
        guest = GuestClient(channel)
        payload = b"compressible " * 50_000
        assert guest.write("z.txt", [payload]) == len(payload)
        assert (tmp_path / "z.txt").read_bytes() == payload
        out, _err, exit_msg = guest.run(["cat"], stdin=b"zipped stdin")
        assert (out, exit_msg.exit_code) == (b"zipped stdin", 0)
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary("/ateenv.v1alpha.ProcessService/ListProcesses")(b"", timeout=10)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_guest_pids_are_left_to_asyncio_by_the_reaper(served: LoopThread) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        guest = GuestClient(channel)
        proc = guest.start(pb.StartProcessRequest(command=["sleep", "300"]), timeout=10)
        assert proc.pid in served.guest.pids()
        assert children.is_owned(proc.pid)
        # An orphan reaper pass while it runs, and after it is killed, takes nothing of ours.
        assert proc.pid not in supervisor.reap_orphans()
        guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_KILL))
        assert guest.collect(proc.process_id)[2].exit_code == 137
        assert not children.is_owned(proc.pid)
        assert served.guest.pids() == set()


def test_aclose_stops_running_processes(tmp_path: Path) -> None:
    server = LoopThread(GuestServices(enabled=True, workspace=tmp_path))
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        proc = GuestClient(channel).start(
            pb.StartProcessRequest(command=["sleep", "300"]), timeout=10
        )
    server.close()
    with pytest.raises(OSError):
        Path(f"/proc/{proc.pid}/cmdline").read_bytes().index(b"sleep")


def _h2_get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        conn.initiate_connection()
        sid = conn.get_next_available_stream_id()
        conn.send_headers(
            sid,
            [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")],
            end_stream=True,
        )
        sock.sendall(conn.data_to_send())
        headers: dict[str, str] = {}
        body = b""
        while True:
            data = sock.recv(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    headers = {k.decode(): v.decode() for k, v in event.headers or []}
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data or b""
                    conn.acknowledge_received_data(event.flow_controlled_length or 0, sid)
                elif isinstance(event, h2.events.StreamEnded):
                    return int(headers[":status"]), headers, body
            sock.sendall(conn.data_to_send())
    raise AssertionError("no response")


def test_plain_http2_requests_go_to_the_fallback(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    async def fallback(
        method: str, path: str, headers: Mapping[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        seen.append((method, path))
        return 200, [("content-type", "text/plain; charset=utf-8")], b"ok\n"

    plain = LoopThread(GuestServices(enabled=True, workspace=tmp_path))
    routed = LoopThread(GuestServices(enabled=False, workspace=tmp_path, http_fallback=fallback))
    try:
        status, headers, body = _h2_get(plain.port, "/healthz")
        assert (status, body) == (404, b"404 page not found\n")
        assert headers["content-type"] == "text/plain; charset=utf-8"
        status, _headers, body = _h2_get(routed.port, "/readyz?check=workspace")
        assert (status, body) == (200, b"ok\n")
        assert seen == [("GET", "/readyz?check=workspace")]
    finally:
        plain.close()
        routed.close()


def test_output_spool_keeps_order_offsets_and_a_bound() -> None:
    async def scenario() -> None:
        spool = OutputSpool(retain=10)
        spool.append(0, b"abc")
        spool.append(1, b"XY")
        spool.append(0, b"def")
        offsets = [1, 0]
        chunks, seq = spool.read_from(0, offsets)
        assert chunks == [(0, b"bc"), (1, b"XY"), (0, b"def")]
        assert offsets == [6, 2] and seq == 3
        spool.append(0, b"0123456789")  # over the bound: older chunks go
        assert spool.kept <= 10 + 10
        chunks, seq = spool.read_from(seq, offsets)
        assert chunks == [(0, b"0123456789")] and seq == 4
        late = [0, 0]
        chunks, _ = spool.read_from(0, late)
        assert chunks[-1] == (0, b"0123456789")

    asyncio.run(scenario())


def test_refused_uploads_do_not_starve_the_connection(served: LoopThread) -> None:
    """Chunks a failed call never read are given back to the connection's window."""
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        guest = GuestClient(channel)
        chunk = b"x" * (1024 * 1024)
        for _ in range(24):  # 24 × up to 2 MiB against a 16 MiB connection window
            with pytest.raises(grpc.RpcError) as info:
                guest.write("/outside/the/workspace", [chunk, chunk])
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert guest.write("inside.bin", [chunk, chunk]) == 2 * len(chunk)


def test_grpc_messages_are_cut_only_when_complete() -> None:
    one = b"\x00" + (3).to_bytes(4, "big") + b"abc"
    two = b"\x01" + (2).to_bytes(4, "big") + b"xy"
    buffer = bytearray(one + two[:4])
    assert list(cut_messages(buffer)) == [(0, b"abc")]
    assert buffer == bytearray(two[:4])  # a partial frame waits for the rest
    buffer += two[4:]
    assert list(cut_messages(buffer)) == [(1, b"xy")]
    assert buffer == bytearray()
    huge = bytearray(b"\x00" + (MAX_MESSAGE_BYTES + 1).to_bytes(4, "big") + b"..")
    (error,) = list(cut_messages(huge))
    assert isinstance(error, GrpcError) and error.code == StatusCode.RESOURCE_EXHAUSTED
    assert huge == bytearray()  # nothing after it can be framed


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("10S", 10.0), ("2M", 120.0), ("1H", 3600.0), ("250m", 0.25), ("7u", 7e-6), ("5n", 5e-9)],
)
def test_grpc_timeout_units(header: str, seconds: float) -> None:
    assert parse_timeout(header) == pytest.approx(seconds)


@pytest.mark.parametrize("header", [None, "", "S", "10", "10x", "-1S", "1.5S"])
def test_grpc_timeout_that_cannot_be_read_is_none(header: str | None) -> None:
    assert parse_timeout(header) is None


def test_grpc_trailers() -> None:
    assert trailers(StatusCode.OK, "", trailers_only=False) == [(b"grpc-status", b"0")]
    only = trailers(StatusCode.NOT_FOUND, "100% gone: é\n", trailers_only=True)
    assert only == [
        (b":status", b"200"),
        (b"content-type", b"application/grpc"),
        (b"grpc-status", b"5"),
        (b"grpc-message", b"100%25 gone: %C3%A9%0A"),
    ]


def test_enabled_method_table_adds_reflection(tmp_path: Path) -> None:
    from ax_task_runner.guest_grpc import REFLECTION_METHODS

    table = GuestServices(enabled=True, workspace=tmp_path)._load_methods()
    assert sorted(table) == sorted(GRPC_METHODS + REFLECTION_METHODS)
    for name in REFLECTION_METHODS:
        assert table[name].client_streaming and table[name].server_streaming


def _shape(file: Any) -> dict[str, Any]:
    """A file's messages and services as (number, type, repeated, type name, oneof) per field."""
    package = file.package
    messages = {
        name: {
            f.name: (
                f.number,
                f.type,
                f.is_repeated,
                f.message_type.full_name.removeprefix(package) if f.message_type else "",
                f.containing_oneof.name if f.containing_oneof else "",
            )
            for f in message.fields
        }
        for name, message in file.message_types_by_name.items()
    }
    services = {
        name: [
            (
                m.name,
                m.input_type.full_name.removeprefix(package),
                m.output_type.full_name.removeprefix(package),
                m.client_streaming,
                m.server_streaming,
            )
            for m in service.methods
        ]
        for name, service in file.services_by_name.items()
    }
    return {"messages": messages, "services": services}


def test_reflection_messages_match_the_generated_ones() -> None:
    """Our runtime-built reflection.proto has the wire shape of the one protoc generated
    for grpcio-reflection (grpc/reflection/v1alpha/reflection.proto), in both packages."""
    from grpc_reflection.v1alpha import reflection_pb2 as generated

    from ax_task_runner._guest.reflection import REFLECTION_PACKAGES, ReflectionService

    service = ReflectionService([], [])
    ours = {v.file.package: v.file for v in service._versions}
    assert sorted(ours) == sorted(REFLECTION_PACKAGES)
    expected = _shape(generated.DESCRIPTOR)
    for package, file in ours.items():
        assert file.name == f"{package.replace('.', '/')}/reflection.proto"
        assert _shape(file) == expected, package
    # Bytes from one decode with the other.
    request = generated.ServerReflectionRequest(host="h", file_containing_symbol="a.B")
    version = service._versions[0]
    decoded = version.request.FromString(request.SerializeToString())
    assert (decoded.host, decoded.WhichOneof("message_request")) == ("h", "file_containing_symbol")


def test_reflection_answers() -> None:
    from google.protobuf.descriptor_pb2 import FileDescriptorProto

    from ax_task_runner._guest.reflection import ReflectionService

    service = ReflectionService(["ateenv.v1alpha.ProcessService"], [pb.DESCRIPTOR])
    version = service._versions[1]
    sent: set[str] = set()

    def ask(**request: Any) -> Any:
        return service.answer(version, version.request(**request), sent)

    def names(response: Any) -> list[str]:
        protos = response.file_descriptor_response.file_descriptor_proto
        return [FileDescriptorProto.FromString(b).name for b in protos]

    guest_file = "ateenv/v1alpha/guest.proto"
    # Symbols of every kind: method, field, oneof, nested map entry, enum value.
    for symbol in (
        "ateenv.v1alpha.ProcessService.StartProcess",
        "ateenv.v1alpha.StreamProcessOutputRequest.stdout_offset",
        "ateenv.v1alpha.ProcessOutput.output",
        "ateenv.v1alpha.StartProcessRequest.EnvEntry",
        "ateenv.v1alpha.PROCESS_STATE_EXITED",
    ):
        assert names(ask(file_containing_symbol=symbol))[0] == guest_file, symbol
    # The reflection service describes itself; its file imports nothing.
    assert names(ask(file_containing_symbol="grpc.reflection.v1.ServerReflection")) == [
        "grpc/reflection/v1/reflection.proto"
    ]
    assert names(ask(file_by_filename="google/protobuf/timestamp.proto")) == [
        "google/protobuf/timestamp.proto"
    ]
    # Files not served are invisible, even when loaded in the process.
    for request in (
        {"file_by_filename": "google/protobuf/descriptor.proto"},
        {"file_containing_symbol": "google.protobuf.FileDescriptorProto"},
        {"all_extension_numbers_of_type": "ateenv.v1alpha.Nope"},
        {"file_containing_extension": {"containing_type": "ateenv.v1alpha.Process"}},
    ):
        response = ask(**request)
        assert response.WhichOneof("message_response") == "error_response", request
        assert response.error_response.error_code == StatusCode.NOT_FOUND
    numbers = ask(all_extension_numbers_of_type="ateenv.v1alpha.Process")
    assert numbers.all_extension_numbers_response.base_type_name == "ateenv.v1alpha.Process"
    assert list(numbers.all_extension_numbers_response.extension_number) == []
    with pytest.raises(GrpcError) as info:
        ask()
    assert info.value.code == StatusCode.INVALID_ARGUMENT
    listed = ask(list_services="*")
    assert [s.name for s in listed.list_services_response.service] == [
        "ateenv.v1alpha.ProcessService",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ]


def test_signal_only_the_enum_values(served: LoopThread) -> None:
    """Upstream maps only the Signal enum's values (guest/process/signal.go
    ``ToSyscallSignal``); a number outside it is INVALID_ARGUMENT ("unsupported signal"),
    not sent on (16 would be SIGSTKFLT on Linux)."""
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        guest = GuestClient(channel)
        proc = guest.start(pb.StartProcessRequest(command=["sleep", "300"]), timeout=10)
        for number in (16, 30, 64, 1000):
            request = pb.SignalProcessRequest(process_id=proc.process_id, signal=number)  # type: ignore[arg-type]
            with pytest.raises(grpc.RpcError) as info:
                guest.signal(request, timeout=10)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, number
        assert guest.get(pb.GetProcessRequest(process_id=proc.process_id)).state == (
            pb.PROCESS_STATE_RUNNING
        )
        guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_KILL))
        assert guest.collect(proc.process_id)[2].exit_code == 137
