"""Guest services of the real runner (subprocess) through a real grpcio client over h2c."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest

from ax_task_runner.guest_grpc import DISABLED_MESSAGE, GRPC_METHODS
from axis_eval.execute.guest import guest_pb2 as pb

from .client import GuestClient, http_get
from .helpers import SPEC_VAR, Runner, run_runner

pytestmark = pytest.mark.timeout(120)


def test_start_stream_stdin_exit_code(guest: GuestClient, debug_runner: Runner) -> None:
    out, err, exit_msg = guest.run(
        ["sh", "-c", "echo out-1; echo err-1 >&2; tr a-z A-Z; exit 3"], stdin=b"typed input\n"
    )
    assert out == b"out-1\nTYPED INPUT\n"
    assert err == b"err-1\n"
    assert exit_msg.state == pb.PROCESS_STATE_EXITED
    assert exit_msg.exit_code == 3
    assert exit_msg.command == ["sh", "-c", "echo out-1; echo err-1 >&2; tr a-z A-Z; exit 3"]
    assert exit_msg.pid > 0 and exit_msg.finished_at.seconds >= exit_msg.started_at.seconds
    # GetProcess afterwards (the client's polling fallback) agrees.
    got = guest.get(pb.GetProcessRequest(process_id=exit_msg.process_id), timeout=10)
    assert (got.state, got.exit_code) == (pb.PROCESS_STATE_EXITED, 3)
    # The HTTP endpoints keep answering on the same port.
    assert http_get(debug_runner.url("/healthz"))[0] == 200


def test_stdin_over_several_calls_and_running_state(guest: GuestClient) -> None:
    proc = guest.start(pb.StartProcessRequest(command=["cat"], stdin=True), timeout=10)
    assert proc.state == pb.PROCESS_STATE_RUNNING and proc.process_id
    first = guest.write_input(
        iter([pb.WriteProcessInputRequest(process_id=proc.process_id, data=b"one ")]), timeout=10
    )
    assert first.bytes_written == 4
    assert guest.get(pb.GetProcessRequest(process_id=proc.process_id)).state == (
        pb.PROCESS_STATE_RUNNING
    )
    chunks = [b"x" * 70000, b" two"]
    second = guest.write_input(
        iter(
            [pb.WriteProcessInputRequest(process_id=proc.process_id, data=c) for c in chunks]
            + [pb.WriteProcessInputRequest(close=True)]
        ),
        timeout=10,
    )
    assert second.bytes_written == 70004
    out, _err, exit_msg = guest.collect(proc.process_id)
    assert out == b"one " + b"x" * 70000 + b" two"
    assert exit_msg.exit_code == 0


def test_signal_reaches_the_process_group(guest: GuestClient) -> None:
    script = (
        'trap "echo got-term; exit 7" TERM; sleep 300 & echo child=$!; '
        "echo ready; while :; do sleep 0.05; done"
    )
    proc = guest.start(pb.StartProcessRequest(command=["sh", "-c", script]), timeout=10)
    seen = b""
    stream = guest.output(
        pb.StreamProcessOutputRequest(process_id=proc.process_id, follow=True), timeout=30
    )
    for msg in stream:
        seen += msg.stdout
        if b"ready\n" in seen:
            break
    stream.cancel()
    child = int(seen.split(b"child=")[1].split(b"\n")[0])
    signalled = guest.signal(
        pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_TERM), timeout=10
    )
    assert signalled.process_id == proc.process_id
    out, _err, exit_msg = guest.collect(proc.process_id)
    assert b"got-term" in out
    assert exit_msg.exit_code == 7
    # The background sleep got SIGTERM too: the whole group was signalled.
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_kill_gives_128_plus_signal(guest: GuestClient) -> None:
    proc = guest.start(pb.StartProcessRequest(command=["sleep", "300"]), timeout=10)
    guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_KILL))
    _out, _err, exit_msg = guest.collect(proc.process_id)
    assert exit_msg.exit_code == 137
    got = guest.get(pb.GetProcessRequest(process_id=proc.process_id), timeout=10)
    assert (got.state, got.exit_code) == (pb.PROCESS_STATE_EXITED, 137)


# -- status codes as upstream's guest daemon answers them. Upstream's tests are in
# agent-substrate/env guest/process/service_test.go (revision 4468a200's ateenv.v1alpha
# API), its handlers in guest/process/service.go.


def test_signal_after_exit_is_failed_precondition(guest: GuestClient) -> None:
    """Upstream TestSignalProcess: "Signalling an exited process is a failed precondition".

    The same test then sends no signal to that exited process and expects
    INVALID_ARGUMENT: the signal is checked before whether the process has exited.
    """
    _out, _err, exit_msg = guest.run(["true"])
    assert exit_msg.state == pb.PROCESS_STATE_EXITED
    request = pb.SignalProcessRequest(process_id=exit_msg.process_id, signal=pb.SIGNAL_KILL)
    with pytest.raises(grpc.RpcError) as info:
        guest.signal(request, timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION, info.value.details()
    assert "exited" in (info.value.details() or "")
    with pytest.raises(grpc.RpcError) as info:
        guest.signal(pb.SignalProcessRequest(process_id=exit_msg.process_id), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()


def test_write_input_with_an_empty_stream_is_invalid_argument(guest: GuestClient) -> None:
    """Upstream TestStdinRejectedWhenNotRequested: a WriteProcessInput stream closed
    without a message is INVALID_ARGUMENT ("expected InvalidArgument for empty stream"):
    it names no process. A first message without ``process_id`` is too."""
    with pytest.raises(grpc.RpcError) as info:
        guest.write_input(iter([]), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        guest.write_input(iter([pb.WriteProcessInputRequest(data=b"x")]), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()


def test_empty_process_id_is_invalid_argument(guest: GuestClient) -> None:
    """Upstream TestNotFound: GetProcess with no ``process_id`` is INVALID_ARGUMENT ("empty
    id"), an unknown one NOT_FOUND. StreamProcessOutput shares GetProcess's lookup
    (service.go ``lookup``: "process_id cannot be empty"), so it answers the same; TestNotFound
    checks its NOT_FOUND half."""
    for call in (
        lambda: guest.get(pb.GetProcessRequest(), timeout=10),
        lambda: list(guest.output(pb.StreamProcessOutputRequest(follow=True), timeout=10)),
    ):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    with pytest.raises(grpc.RpcError) as info:
        list(guest.output(pb.StreamProcessOutputRequest(process_id="nope"), timeout=10))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND, info.value.details()


@pytest.mark.parametrize("offsets", [{"stdout_offset": -1}, {"stderr_offset": -5}])
def test_negative_output_offset_is_invalid_argument(
    guest: GuestClient, offsets: dict[str, int]
) -> None:
    """Upstream guest/process/service.go StreamProcessOutput: after the process lookup,
    "offsets cannot be negative" is INVALID_ARGUMENT (service_test.go has no case of its
    own for it; its ``wait`` helper relies on large offsets being accepted, checked here)."""
    _out, _err, exit_msg = guest.run(["sh", "-c", "echo hi"])
    request = pb.StreamProcessOutputRequest(process_id=exit_msg.process_id, **offsets)
    with pytest.raises(grpc.RpcError) as info:
        list(guest.output(request, timeout=10))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    # Offsets past the end are fine: only the exit message (upstream's ``wait``).
    big = 2**63 - 1
    assert guest.collect(exit_msg.process_id, stdout_offset=big, stderr_offset=big) == (
        b"",
        b"",
        exit_msg,
    )


def test_environment_and_working_directory(guest: GuestClient, debug_runner: Runner) -> None:
    out, _err, exit_msg = guest.run(
        ["sh", "-c", f'pwd; echo "${SPEC_VAR[0]}"; echo "$EXTRA"; echo "$AX_METADATA_URL"'],
        env={"EXTRA": "from-request"},
    )
    assert exit_msg.exit_code == 0
    cwd, spec_value, extra, metadata_url = out.decode().splitlines()
    assert os.path.realpath(cwd) == os.path.realpath(debug_runner.workspace)
    assert spec_value == SPEC_VAR[1]
    assert extra == "from-request"
    assert metadata_url == f"http://127.0.0.1:{debug_runner.port}"
    sub = debug_runner.workspace / "sub"
    sub.mkdir(exist_ok=True)
    out, _err, _exit = guest.run(["pwd"], cwd="sub")
    assert os.path.realpath(out.decode().strip()) == os.path.realpath(sub)


def test_replay_with_offsets_and_no_follow(guest: GuestClient) -> None:
    out, err, exit_msg = guest.run(["sh", "-c", "printf abcdef; printf 123 >&2"])
    assert (out, err) == (b"abcdef", b"123")
    out, err, replay_exit = guest.collect(
        exit_msg.process_id, follow=False, stdout_offset=4, stderr_offset=3
    )
    assert (out, err) == (b"ef", b"")
    assert replay_exit.exit_code == 0
    # A running process without follow: the output so far, no exit message.
    proc = guest.start(
        pb.StartProcessRequest(command=["sh", "-c", "echo early; sleep 300"]), timeout=10
    )
    deadline = time.monotonic() + 10
    out = b""
    while b"early" not in out and time.monotonic() < deadline:
        out, _err, running_exit = guest.collect(proc.process_id, follow=False)
        time.sleep(0.05)
    assert out == b"early\n"
    assert running_exit.process_id == ""  # no exit message while it runs
    guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_KILL))
    assert guest.collect(proc.process_id)[2].exit_code == 137


def test_large_output_is_delivered_whole(guest: GuestClient) -> None:
    out, _err, exit_msg = guest.run(["head", "-c", "3000000", "/dev/zero"], timeout=60)
    assert exit_msg.exit_code == 0
    assert len(out) == 3_000_000 and out.count(b"\0") == 3_000_000


def test_write_then_read_a_file(guest: GuestClient, debug_runner: Runner) -> None:
    payload = os.urandom(300_000)
    written = guest.write("notes/data.bin", [payload[:100_000], payload[100_000:]], mode=0o600)
    assert written == len(payload)
    on_disk = debug_runner.workspace / "notes" / "data.bin"
    assert on_disk.read_bytes() == payload
    assert on_disk.stat().st_mode & 0o777 == 0o600
    assert guest.read("notes/data.bin") == payload
    assert guest.read(str(on_disk)) == payload  # absolute paths inside the workspace
    # seek_offset keeps the rest of the file.
    guest.write("notes/data.bin", [b"HEAD"], seek_offset=2)
    assert guest.read("notes/data.bin")[:8] == payload[:2] + b"HEAD" + payload[6:8]
    # A process sees what WriteFile wrote.
    out, _err, _exit = guest.run(["wc", "-c", "notes/data.bin"])
    assert out.split()[0] == str(len(payload)).encode()
    # ReadFile with a mode creates a missing file, empty.
    assert guest.read("created/empty.txt", mode=0o640) == b""
    created = debug_runner.workspace / "created" / "empty.txt"
    assert created.exists() and created.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda g: g.get(pb.GetProcessRequest(process_id="nope")), grpc.StatusCode.NOT_FOUND),
        (lambda g: g.start(pb.StartProcessRequest()), grpc.StatusCode.INVALID_ARGUMENT),
        (
            lambda g: g.start(pb.StartProcessRequest(command=["/no/such/program"])),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            lambda g: g.start(pb.StartProcessRequest(command=["true"], cwd="/no/such/dir")),
            grpc.StatusCode.FAILED_PRECONDITION,
        ),
        (
            lambda g: g.signal(pb.SignalProcessRequest(process_id="nope", signal=pb.SIGNAL_TERM)),
            grpc.StatusCode.NOT_FOUND,
        ),
        (lambda g: g.read("missing.txt"), grpc.StatusCode.NOT_FOUND),
        (lambda g: g.read("/etc/hostname"), grpc.StatusCode.PERMISSION_DENIED),
        (lambda g: g.read("../outside.txt"), grpc.StatusCode.PERMISSION_DENIED),
        (lambda g: g.write("", [b"x"]), grpc.StatusCode.INVALID_ARGUMENT),
    ],
    ids=[
        "get-unknown",
        "start-empty",
        "start-missing-program",
        "start-missing-cwd",
        "signal-unknown",
        "read-missing",
        "read-outside-absolute",
        "read-outside-relative",
        "write-no-path",
    ],
)
def test_errors_map_to_grpc_status(guest: GuestClient, call: object, code: grpc.StatusCode) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call(guest)  # type: ignore[operator]
    assert info.value.code() == code, info.value.details()


def test_stdin_refused_without_stdin_flag(guest: GuestClient) -> None:
    proc = guest.start(pb.StartProcessRequest(command=["sleep", "300"]), timeout=10)
    # A message with neither data nor close writes nothing and is no error (upstream's
    # WriteProcessInput acts on data and close only when set).
    only_id = pb.WriteProcessInputRequest(process_id=proc.process_id)
    assert guest.write_input(iter([only_id]), timeout=10).bytes_written == 0
    with pytest.raises(grpc.RpcError) as info:
        guest.write_input(
            iter([pb.WriteProcessInputRequest(process_id=proc.process_id, data=b"x")]), timeout=10
        )
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_KILL))


def test_concurrent_calls_share_one_connection(guest: GuestClient) -> None:
    procs = [
        guest.start(pb.StartProcessRequest(command=["sh", "-c", f"sleep 0.3; echo {i}"]))
        for i in range(8)
    ]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda p: guest.collect(p.process_id), procs))
    for i, (out, _err, exit_msg) in enumerate(results):
        assert (out, exit_msg.exit_code) == (f"{i}\n".encode(), 0)


def test_every_method_unimplemented_without_debug(
    plain_guest: GuestClient, plain_runner: Runner
) -> None:
    calls = {
        "StartProcess": lambda: plain_guest.start(pb.StartProcessRequest(command=["true"])),
        "GetProcess": lambda: plain_guest.get(pb.GetProcessRequest(process_id="x")),
        "StreamProcessOutput": lambda: list(
            plain_guest.output(pb.StreamProcessOutputRequest(process_id="x", follow=True))
        ),
        "WriteProcessInput": lambda: plain_guest.write_input(
            iter([pb.WriteProcessInputRequest(process_id="x", data=b"x", close=True)])
        ),
        "SignalProcess": lambda: plain_guest.signal(
            pb.SignalProcessRequest(process_id="x", signal=pb.SIGNAL_TERM)
        ),
        "ReadFile": lambda: plain_guest.read("anything"),
        "WriteFile": lambda: plain_guest.write("anything", [b"x"]),
    }
    assert sorted(calls) == sorted(m.rsplit("/", 1)[1] for m in GRPC_METHODS)
    for name, call in calls.items():
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED, name
        assert info.value.details() == DISABLED_MESSAGE
    # Nothing was written or started; HTTP still answers on the same port.
    assert not (plain_runner.workspace / "anything").exists()
    assert http_get(plain_runner.url("/healthz"))[0] == 200


def test_guest_processes_end_with_the_runner(tmp_path: Path) -> None:
    with run_runner(tmp_path, debug=True) as runner:
        with grpc.insecure_channel(f"127.0.0.1:{runner.port}") as channel:
            proc = GuestClient(channel).start(
                pb.StartProcessRequest(command=["sleep", "300"]), timeout=10
            )
        assert _alive(proc.pid)
        runner.proc.send_signal(signal.SIGTERM)
        assert runner.proc.wait(timeout=30) == 0
    deadline = time.monotonic() + 5
    while _alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(proc.pid)


def _h2c_get(port: int, path: str) -> tuple[int, bytes]:
    """A plain (non-gRPC) HTTP/2 GET over h2c with prior knowledge, using hyper-h2."""
    import socket

    import h2.config
    import h2.connection
    import h2.events

    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    conn.send_headers(
        1,
        [(":method", "GET"), (":path", path), (":scheme", "http"), (":authority", "x")],
        end_stream=True,
    )
    sock.sendall(conn.data_to_send())
    status, body, done = 0, b"", False
    while not done:
        data = sock.recv(65536)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                done = True
        sock.sendall(conn.data_to_send())
    sock.close()
    return status, body


def test_plain_http2_requests_reach_the_same_routes(debug_runner: Runner) -> None:
    """h2c multiplexes the HTTP endpoints with gRPC: /healthz over HTTP/2 answers like HTTP/1."""
    assert _h2c_get(debug_runner.port, "/healthz") == (200, b"ok\n")
    status, body = _h2c_get(debug_runner.port, "/metadata/v1alpha1/ax/task")
    assert status == 200 and b"spec" in body
    assert _h2c_get(debug_runner.port, "/nope")[0] == 404


# -- server reflection (upstream guest/server.go NewServer: reflection.Register)


def test_reflection_lists_services_and_resolves_symbols(debug_runner: Runner) -> None:
    """Upstream's guest daemon registers gRPC server reflection (agent-substrate/env
    guest/server.go ``NewServer``: ``reflection.Register(grpcServer)``, which serves
    grpc.reflection.v1 and v1alpha). Checked with grpcio-reflection's client (what grpcurl
    does): list the services, then resolve a symbol's file and build it in a fresh pool."""
    from google.protobuf import descriptor_pool
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    with grpc.insecure_channel(f"127.0.0.1:{debug_runner.port}") as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        assert list(database.get_services()) == [
            "ateenv.v1alpha.FileSystemService",
            "ateenv.v1alpha.ProcessService",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]
        pool = descriptor_pool.DescriptorPool(database)
        service = pool.FindServiceByName("ateenv.v1alpha.ProcessService")
        assert service.file.name == "ateenv/v1alpha/guest.proto"
        methods = {m.name: (m.input_type.name, m.output_type.name) for m in service.methods}
        assert methods["SignalProcess"] == ("SignalProcessRequest", "Process")
        assert len(methods) == 5
        # Its imports came along (Timestamp resolved from what the server sent).
        process = pool.FindMessageTypeByName("ateenv.v1alpha.Process")
        assert process.fields_by_name["started_at"].message_type.full_name == (
            "google.protobuf.Timestamp"
        )
        # A method name and a file name resolve too; an unknown symbol is NOT_FOUND.
        assert (
            database.FindFileContainingSymbol("ateenv.v1alpha.FileSystemService.ReadFile").name
            == "ateenv/v1alpha/guest.proto"
        )
        assert database.FindFileByName("google/protobuf/duration.proto").package == (
            "google.protobuf"
        )
        with pytest.raises(KeyError):
            database.FindFileContainingSymbol("ateenv.v1alpha.NoSuchThing")


def test_reflection_v1_answers_like_v1alpha(debug_runner: Runner) -> None:
    """grpc.reflection.v1 (what grpcurl tries first) has v1alpha's messages on another path;
    the same requests on one stream, the way grpcurl sends them."""
    from google.protobuf.descriptor_pb2 import FileDescriptorProto
    from grpc_reflection.v1alpha import reflection_pb2 as rpb

    with grpc.insecure_channel(f"127.0.0.1:{debug_runner.port}") as channel:
        info = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=rpb.ServerReflectionRequest.SerializeToString,
            response_deserializer=rpb.ServerReflectionResponse.FromString,
        )
        requests = [
            rpb.ServerReflectionRequest(host="h", list_services=""),
            rpb.ServerReflectionRequest(file_containing_symbol="ateenv.v1alpha.Process"),
            rpb.ServerReflectionRequest(file_containing_symbol="ateenv.v1alpha.SIGNAL_TERM"),
            rpb.ServerReflectionRequest(file_by_filename="no/such.proto"),
        ]
        listed, by_symbol, again, missing = list(info(iter(requests), timeout=10))
    assert listed.valid_host == "h" and listed.original_request == requests[0]
    assert "ateenv.v1alpha.ProcessService" in [
        s.name for s in listed.list_services_response.service
    ]
    files = [
        FileDescriptorProto.FromString(b).name
        for b in by_symbol.file_descriptor_response.file_descriptor_proto
    ]
    assert files == [
        "ateenv/v1alpha/guest.proto",
        "google/protobuf/duration.proto",
        "google/protobuf/timestamp.proto",
    ]
    # On the same stream, imports already sent are not sent again.
    assert [
        FileDescriptorProto.FromString(b).name
        for b in again.file_descriptor_response.file_descriptor_proto
    ] == ["ateenv/v1alpha/guest.proto"]
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]


def test_reflection_is_off_without_debug(plain_runner: Runner) -> None:
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    with (
        grpc.insecure_channel(f"127.0.0.1:{plain_runner.port}") as channel,
        pytest.raises(grpc.RpcError) as info,
    ):
        list(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
