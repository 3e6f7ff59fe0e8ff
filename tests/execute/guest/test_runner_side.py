"""The runner's side of what the client needs: its Unix socket, its file roots, its base
environment for guest processes, and a spool a follower reads in constant time."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path

import pytest

from ax_task_runner.__main__ import build_parser
from ax_task_runner._guest.errors import FileError
from ax_task_runner._guest.files import FileAccess
from ax_task_runner._guest.processes import OutputSpool
from ax_task_runner.errors import RunnerError, ServeError
from ax_task_runner.guest_grpc import GuestServices
from ax_task_runner.server import MetadataServer, ServerState
from ax_task_runner.sources import config_from_sources
from axis_eval.execute.guest import GuestClient, GuestError

pytestmark = pytest.mark.timeout(60)


def test_options_from_flags_and_variables() -> None:
    flags = ["--unix-socket", "/run/g.sock", "--files-root", "/a", "--files-root", "/b"]
    flags += ["--no-confine-files", "--guest-env", "empty"]
    args = vars(build_parser().parse_args(flags))
    args.pop("task_file"), args.pop("workspace_file")
    config = config_from_sources(args, None, [], {})
    assert config.unix_socket == "/run/g.sock"
    assert config.files_roots == ["/a", "/b"]
    assert config.confine_files is False and config.guest_env == "empty"
    environ = {
        "AX_RUNNER_UNIX_SOCKET": "/s",
        "AX_RUNNER_FILES_ROOT": "/x:/y",
        "AX_RUNNER_CONFINE_FILES": "false",
        "AX_RUNNER_GUEST_ENV": "empty",
    }
    config = config_from_sources({}, None, [], environ)
    assert (config.unix_socket, config.files_roots) == ("/s", ["/x", "/y"])
    assert config.confine_files is False and config.guest_env == "empty"
    defaults = config_from_sources({}, None, [], {})
    assert defaults.unix_socket is None and defaults.files_roots == []
    assert defaults.confine_files is True and defaults.guest_env == "runner"
    with pytest.raises(RunnerError, match="guest_env"):
        config_from_sources({}, None, [], {"AX_RUNNER_GUEST_ENV": "none"})
    # An unreadable boolean keeps the default (with a warning), as every variable does.
    assert config_from_sources({}, None, [], {"AX_RUNNER_CONFINE_FILES": "maybe"}).confine_files


async def _get(path: str, target: str) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    return data


async def test_the_server_listens_on_a_unix_socket_and_removes_it(tmp_path: Path) -> None:
    path = str(tmp_path / "g.sock")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)  # what a killed runner leaves behind
    stale.close()
    guest = GuestServices(enabled=False, workspace=tmp_path)
    server = MetadataServer(ServerState(), h2c_handler=guest)
    await server.start_unix(path)
    try:
        assert (await _get(path, "/healthz")).startswith(b"HTTP/1.1 200")
        # h2c on the same socket: served, but without spec.debug every call is UNIMPLEMENTED.
        with pytest.raises(GuestError) as off:
            await GuestClient.connect(unix_socket=path, timeout_s=5)
        assert off.value.code == "UNIMPLEMENTED" and "spec.debug" in off.value.message
    finally:
        await guest.aclose()
        await server.close()
    assert not os.path.exists(path)
    assert sorted(os.listdir(tmp_path)) == []  # no temporary name left beside it
    with pytest.raises(ServeError, match="cannot listen on Unix socket"):
        await server.start_unix(str(tmp_path / "missing" / "g.sock"))
    (tmp_path / "plain").write_text("not a socket")
    with pytest.raises(ServeError, match="not a socket"):
        await server.start_unix(str(tmp_path / "plain"))
    assert (tmp_path / "plain").read_text() == "not a socket"  # left as it was


async def test_the_unix_socket_appears_already_listening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bound and listening under a temporary name, then renamed into place: a client that
    connects the moment the file exists is never refused (a bound socket that does not
    listen yet refuses)."""
    from ax_task_runner import server as server_module

    path = str(tmp_path / "g.sock")
    seen: list[bool] = []
    real_listen = socket.socket.listen

    def listen(sock: socket.socket, *args: int) -> None:
        seen.append(os.path.exists(path))  # the final name, while it is not listening yet
        real_listen(sock, *args)

    monkeypatch.setattr(server_module.socket.socket, "listen", listen)
    sock = server_module._listening_unix_socket(path)
    monkeypatch.undo()
    try:
        assert seen == [False]
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(path)  # listening from the moment it appeared
        probe.close()
        assert sorted(os.listdir(tmp_path)) == ["g.sock"]
    finally:
        sock.close()


async def test_the_client_over_tcp(tmp_path: Path) -> None:
    guest = GuestServices(enabled=True, workspace=tmp_path, env={})
    server = MetadataServer(ServerState(), h2c_handler=guest)
    port = await server.start("127.0.0.1", 0)
    try:
        async with await GuestClient.connect(port=port, timeout_s=5) as client:
            assert client.endpoint == f"127.0.0.1:{port}"
            state = await client.start_process(["/bin/echo", "over tcp"])
            out = b"".join([c.stdout async for c in client.stream_output(state.process_id)])
            assert out == b"over tcp\n"
    finally:
        await guest.aclose()
        await server.close()


def test_files_are_confined_to_the_roots_given(tmp_path: Path) -> None:
    work, extra, outside = tmp_path / "work", tmp_path / "extra", tmp_path / "outside"
    for folder in (work, extra, outside):
        folder.mkdir()
    (extra / "escape").symlink_to(outside)
    access = FileAccess(work, roots=[work, extra])
    assert access.resolve("a.txt") == work / "a.txt"
    assert access.resolve(str(extra / "b" / "c")) == extra / "b" / "c"
    assert access.resolve(str(extra)) == extra
    for path in (str(outside / "x"), str(extra / "escape" / "x"), "../outside/x"):
        with pytest.raises(FileError) as refused:
            access.resolve(path)
        assert refused.value.kind == "permission" and "folders allowed" in refused.value.message
    # The default: the workspace alone; unconfined: anything.
    with pytest.raises(FileError, match="outside the guest workspace"):
        FileAccess(work).resolve(str(extra / "b"))
    assert FileAccess(work, confine=False).resolve(str(outside / "x")) == outside / "x"


def test_a_follower_reads_new_chunks_without_walking_the_whole_spool() -> None:
    async def scenario() -> float:
        spool = OutputSpool()
        for _ in range(200_000):  # small lines, far under the 32 MiB bound
            spool.append(0, b"line\n")
        offsets = [spool.totals[0], 0]
        seq = spool.next_seq
        started = time.perf_counter()
        for _ in range(2_000):  # a follower after each new line
            spool.append(0, b"more\n")
            chunks, seq = spool.read_from(seq, offsets)
            assert chunks == [(0, b"more\n")]
        return time.perf_counter() - started

    # Walking the spool each time is 2,000 x 200,000 steps (tens of seconds).
    assert asyncio.run(scenario()) < 1.0
