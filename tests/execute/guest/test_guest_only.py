"""``ax-task-runner --guest-services-only`` (what the docker sandbox runs as PID 1): the
guest services with no Task, listening only once they answer, never loading pydantic.

A real runner on this host (a subprocess) on a Unix socket, driven with axis-eval's client.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from axis_eval.execute.guest import GuestClient, GuestError
from axis_eval.execute.guest._rpc import Endpoint, Rpc

pytestmark = pytest.mark.timeout(60)


@contextlib.contextmanager
def guest_only(
    tmp: Path, *flags: str, env: dict[str, str] | None = None, importtime: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """The runner on ``tmp/g.sock``, its log (stdout and stderr) in ``tmp/runner.log``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    environ.update(env or {}, PYTHONUNBUFFERED="1")
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "ax_task_runner"]
    argv += ["--guest-services-only", "--unix-socket", str(tmp / "g.sock")]
    argv += ["--workspace-root", str(tmp / "ws"), *flags]
    with open(tmp / "runner.log", "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=environ, cwd=tmp)
    try:
        yield proc, str(tmp / "g.sock"), tmp / "runner.log"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


async def wait_for_socket(proc: subprocess.Popen[bytes], path: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "no socket within 30 s"
        await asyncio.sleep(0.002)


async def http_get(path: str, target: str) -> bytes:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    return data


async def test_it_answers_the_first_call_as_the_socket_appears_and_serves_as_debug_does(
    tmp_path: Path,
) -> None:
    with guest_only(tmp_path, "--guest-env", "empty", "--no-confine-files") as (proc, sock, log):
        await wait_for_socket(proc, sock, log)
        # One call, no retry: the services were loaded before the runner listened (the
        # Task path makes its socket first and attaches them after).
        rpc = Rpc(Endpoint(sock, "127.0.0.1", None), call_timeout_s=10)
        try:
            with pytest.raises(GuestError) as unknown:
                await rpc.get_process("p-none")
            assert unknown.value.code == "NOT_FOUND"
        finally:
            rpc.close()
        assert (await http_get(sock, "/healthz")).startswith(b"HTTP/1.1 200")
        assert (await http_get(sock, "/readyz")).startswith(b"HTTP/1.1 200")  # nothing to prepare
        task = await http_get(sock, "/metadata/v1alpha1/ax/task")
        assert task.startswith(b"HTTP/1.1 404") and b"task metadata not available" in task
        async with await GuestClient.connect(unix_socket=sock, timeout_s=10) as client:
            # --guest-env empty: exactly the request's env; the cwd defaults to the workspace.
            state = await client.start_process(["/bin/sh", "-c", "pwd; env"], env={"ONLY": "me"})
            out = b"".join([c.stdout async for c in client.stream_output(state.process_id)])
            lines = out.decode().split()
            assert lines[0] == str(tmp_path / "ws")
            assert sorted(lines[1:]) == sorted(["ONLY=me", f"PWD={tmp_path / 'ws'}"])
            outside = tmp_path / "outside.txt"  # --no-confine-files: any path
            await client.write_file(str(outside), b"written")
            assert await client.read_file(str(outside)) == b"written"
            sleeper = await client.start_process(["/bin/sleep", "60"])
            pid = sleeper.pid
            assert pid > 0
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 20) == 0
    # A clean stop: the guest process ended with it, the socket file is gone.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(sock)
    text = log.read_text()
    assert "guest services enabled (--guest-services-only)" in text
    assert "received signal; stopping" in text


async def test_it_never_loads_pydantic_and_loads_nothing_once_serving(tmp_path: Path) -> None:
    with guest_only(tmp_path, "--guest-env", "empty", importtime=True) as (proc, sock, log):
        await wait_for_socket(proc, sock, log)
        async with await GuestClient.connect(unix_socket=sock, timeout_s=10) as client:
            state = await client.start_process(["/bin/echo", "hi"], env={})
            out = b"".join([c.stdout async for c in client.stream_output(state.process_id)])
            assert out == b"hi\n"
            await client.write_file("f.txt", b"x")
            assert await client.read_file("f.txt") == b"x"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 20) == 0
    lines = log.read_text().splitlines()
    imported = [line.split("|")[-1].strip() for line in lines if line.startswith("import time:")]
    heavy = ("pydantic", "pydantic_core", "yaml", "grpclib")
    ours = ("ax_task_runner.config", "ax_task_runner.spec", "ax_task_runner.runner")
    assert [m for m in imported if m.split(".")[0] in heavy or m.startswith(ours)] == []
    assert {"h2.connection", "google.protobuf", "axis_eval.execute.process.spawning"} <= set(
        imported
    )
    ready = next(i for i, line in enumerate(lines) if "guest services enabled" in line)
    late = [line for line in lines[ready:] if line.startswith("import time:")]
    assert late == []  # the first calls (process, output, files) imported nothing more


def test_it_refuses_what_needs_a_task(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "ax_task_runner", "--guest-services-only"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AX_")}
    done = subprocess.run(
        [*base, "--task-file", "t.yaml", "--state-dir", "/s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 2, done
    assert "--guest-services-only serves no Task: drop --task-file, --state-dir" in done.stderr
    assert "Traceback" not in done.stderr
    env["AX_TASK_YAML"] = "kind: Task"
    done = subprocess.run(
        [*base, "--unix-socket", str(tmp_path / "g.sock")],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 1, done
    assert "serves no Task: AX_TASK_YAML is set" in done.stdout
    assert not (tmp_path / "g.sock").exists() and "Traceback" not in done.stdout + done.stderr
