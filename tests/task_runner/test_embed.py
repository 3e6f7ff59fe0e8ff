"""The Python API in-process: hooks around the server and the command, the h2c seam."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from ax_task_runner import (
    CommandExit,
    Runner,
    RunnerConfig,
    RunnerError,
    parse_task,
    parse_workspaces,
    run_async,
)
from ax_task_runner.server import H2C_PREFACE, MetadataServer, ServerState

TASK = f"""
apiVersion: ax.io/v1alpha1
kind: Task
metadata: {{name: embedded}}
spec:
  command: ["{sys.executable}", "-c", "import sys; sys.exit(5)"]
  workspaces: [{{name: main}}]
"""


async def _http(port: int, path: str) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def _config(tmp_path: Path, **overrides: Any) -> RunnerConfig:
    task = parse_task(TASK).value
    workspaces = parse_workspaces("kind: Workspace\nmetadata: {name: main}\nspec: {}\n").value
    values: dict[str, Any] = {
        "task": task,
        "workspaces": workspaces,
        "host": "127.0.0.1",
        "port": 0,
        "workspace_root": str(tmp_path / "volume"),
        "state_dir": str(tmp_path / "ax"),
        "reap_orphans": False,  # pytest's own children are not ours to reap
        "export_env": False,
    }
    values.update(overrides)
    return RunnerConfig(**values)


async def test_hooks_around_the_server_and_the_command(tmp_path: Path) -> None:
    calls: list[tuple[str, Any]] = []
    exited = asyncio.Event()

    def before(runner: Runner) -> None:
        calls.append(("before_serve", runner.port))

    async def after(runner: Runner) -> None:
        status, body = await _http(runner.port or 0, "/healthz")
        calls.append(("after_serve", (status, body, runner.metadata_url)))

    def ready(runner: Runner) -> None:
        calls.append(("on_ready", runner.workspace))

    def on_exit(exit: CommandExit) -> None:
        calls.append(("on_command_exit", exit))
        exited.set()

    stop = asyncio.Event()
    config = _config(
        tmp_path, before_serve=before, after_serve=after, on_ready=ready, on_command_exit=on_exit
    )
    running = asyncio.create_task(run_async(config, stop=stop))
    await asyncio.wait_for(exited.wait(), 15)
    names = [name for name, _ in calls]
    assert names == ["before_serve", "after_serve", "on_ready", "on_command_exit"]
    assert calls[0][1] is None
    status, body, url = calls[1][1]
    assert (status, body) == (200, b"ok\n") and url.startswith("http://127.0.0.1:")
    assert calls[2][1] == str(tmp_path / "volume" / "main")
    exit = calls[3][1]
    assert isinstance(exit, CommandExit)
    assert (exit.exit_code, exit.signal, exit.error) == (5, None, "exit status 5")
    assert exit.pid is not None and exit.pid > 0
    # Still serving after the command exited, until stopped.
    port = int(url.rsplit(":", 1)[1])
    assert await _http(port, "/readyz") == (200, b"ok\n")
    stop.set()
    assert await asyncio.wait_for(running, 10) == 0
    assert (tmp_path / "volume" / ".ax-task-runner" / "runner-state.json").exists()


async def test_h2c_connections_go_to_the_handler(tmp_path: Path) -> None:
    seen: list[bytes] = []
    release = asyncio.Event()

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: bytes
    ) -> None:
        seen.append(first)
        seen.append(await reader.readexactly(5))
        await release.wait()
        writer.write(b"h2c-ok")
        await writer.drain()

    ready = asyncio.Event()
    ports: list[int] = []

    def after(runner: Runner) -> None:
        ports.append(runner.port or 0)
        ready.set()

    stop = asyncio.Event()
    config = _config(tmp_path, h2c_handler=handler, after_serve=after, task=None)
    running = asyncio.create_task(run_async(config, stop=stop))
    await asyncio.wait_for(ready.wait(), 10)
    reader, writer = await asyncio.open_connection("127.0.0.1", ports[0])
    writer.write(H2C_PREFACE + b"hello")
    await writer.drain()
    for _ in range(200):
        if len(seen) == 2:
            break
        await asyncio.sleep(0.01)
    assert seen == [H2C_PREFACE, b"hello"]
    _, body = await _http(ports[0], "/metadata/v1alpha1/ax/status")
    assert b'"inFlight": 1' in body and b'"idleSeconds": 0' in body
    release.set()
    assert await asyncio.wait_for(reader.read(), 5) == b"h2c-ok"
    writer.close()
    await writer.wait_closed()
    stop.set()
    assert await asyncio.wait_for(running, 10) == 0


async def test_without_a_handler_h2c_connections_are_closed() -> None:
    server = MetadataServer(ServerState(), h2c_handler=None)
    port = await server.start("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(H2C_PREFACE)
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        await writer.wait_closed()
        # HTTP/1.1 on the same port still works, and a half preface is just a bad request.
        assert await _http(port, "/healthz") == (200, b"ok\n")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"PRI * HTTP/1.1\r\nConnection: close\r\n\r\n")
        await writer.drain()
        assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 404")
        writer.close()
        await writer.wait_closed()
    finally:
        await server.close()


async def test_a_failing_hook_stops_the_start(tmp_path: Path) -> None:
    def broken(runner: Runner) -> None:
        raise ValueError("no database")

    with pytest.raises(RunnerError, match="before_serve hook failed: ValueError: no database"):
        await run_async(_config(tmp_path, before_serve=broken), stop=asyncio.Event())


async def test_port_in_use_is_a_runner_error(tmp_path: Path) -> None:
    server = MetadataServer(ServerState())
    port = await server.start("127.0.0.1", 0)
    try:
        with pytest.raises(RunnerError, match="cannot listen"):
            await run_async(_config(tmp_path, port=port), stop=asyncio.Event())
    finally:
        await server.close()
