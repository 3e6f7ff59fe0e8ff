"""The guest-service client end to end against a real runner on a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from axis_eval.adapters.base import (
    AdapterInput,
    AdapterResult,
    LinesMode,
    ResultContext,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.execute.guest import GuestClient, GuestError, RemoteProcess
from axis_eval.execute.process import ProcessSpec, SpawnFailed
from axis_eval.execute.supervise import RunControl, run_agent
from axis_eval.planning.models import AgentSpec

from .conftest import SPEC_VAR, GuestRunner

pytestmark = pytest.mark.timeout(60)

PY = sys.executable
BASE_ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


@pytest.fixture
async def guest(runner: GuestRunner) -> AsyncIterator[GuestClient]:
    # The first test waits for the runner to start: connect retries until it answers.
    async with await GuestClient.connect(unix_socket=runner.socket, timeout_s=30) as client:
        yield client


@pytest.fixture
async def plain_guest(plain_runner: GuestRunner) -> AsyncIterator[GuestClient]:
    async with await GuestClient.connect(unix_socket=plain_runner.socket, timeout_s=30) as client:
        yield client


async def spawn(guest: GuestClient, argv: list[str], cwd: str, **kw: Any) -> RemoteProcess:
    env = kw.pop("env", BASE_ENV)
    return await guest.spawn(ProcessSpec(argv, cwd, env, None, **kw))


# -- processes ----------------------------------------------------------------------------


async def test_start_process_streams_stdout_and_stderr_with_env_and_cwd(
    guest: GuestClient, runner: GuestRunner, tmp_path: Path
) -> None:
    code = (
        "import os,sys; print(os.getcwd()); print(sorted(os.environ)); print('e', file=sys.stderr)"
    )
    state = await guest.start_process([PY, "-c", code], cwd=str(tmp_path), env={"ONLY": "1"})
    assert state.running and state.exit_code is None and state.pid > 0
    out, err = b"", b""
    last = None
    async for chunk in guest.stream_output(state.process_id):
        out += chunk.stdout
        err += chunk.stderr
        last = chunk.exit
    assert last is not None and not last.running and last.exit_code == 0
    cwd, names = out.decode().splitlines()
    assert cwd == str(tmp_path)
    # --guest-env empty: exactly the request's env (the runner's own and spec.env left out;
    # Python adds LC_CTYPE under the C locale).
    assert set(eval(names)) - {"LC_CTYPE"} == {"ONLY"}
    assert err == b"e\n"
    assert (await guest.get_process(state.process_id)).exit_code == 0
    # Replay from offsets, without follow.
    chunks = [c async for c in guest.stream_output(state.process_id, stdout_offset=len(cwd) + 1)]
    assert b"".join(c.stdout for c in chunks) == out[len(cwd) + 1 :]
    assert chunks[-1].exit is not None


async def test_spawn_gives_the_spec_env_and_cwd(guest: GuestClient, tmp_path: Path) -> None:
    code = "import json,os; print(json.dumps([os.getcwd(), dict(os.environ)]))"
    proc = await spawn(guest, [PY, "-c", code], str(tmp_path), env={**BASE_ENV, "K": "v w"})
    assert await proc.wait() == 0
    cwd, env = json.loads(await proc.stdout.read())
    await proc.stop()
    assert cwd == str(tmp_path)
    assert {k: v for k, v in env.items() if k != "LC_CTYPE"} == {**BASE_ENV, "K": "v w"}
    assert SPEC_VAR[0] not in env


async def test_stdin_pipe_round_trip_through_cat(guest: GuestClient, tmp_path: Path) -> None:
    proc = await spawn(guest, ["cat"], str(tmp_path), stdin_pipe=True)
    assert proc.stdin is not None
    payload = bytes(range(256)) * 4096  # 1 MiB, binary, past the writer's high-water mark
    reading = asyncio.ensure_future(proc.stdout.read())
    for i in range(0, len(payload), 100_000):
        proc.stdin.write(payload[i : i + 100_000])
        await proc.stdin.drain()
    proc.stdin.close()
    await proc.stdin.wait_closed()
    assert await reading == payload
    assert await proc.wait() == 0
    await proc.stop()
    # The lower-level call: a process started with stdin, written in two calls.
    state = await guest.start_process(["cat"], stdin=True)
    assert await guest.write_input(state.process_id, b"one ") == 4
    assert await guest.write_input(state.process_id, b"two", close=True) == 3
    out = b"".join([c.stdout async for c in guest.stream_output(state.process_id)])
    assert out == b"one two"


async def test_stdin_data_is_written_then_closed(guest: GuestClient, tmp_path: Path) -> None:
    data = b"prompt \x00 line\n" * 50_000
    proc = await spawn(guest, ["cat"], str(tmp_path), stdin_data=data)
    assert proc.stdin is None
    assert await proc.stdout.read() == data
    assert await proc.wait() == 0
    await proc.stop()


async def test_writing_to_an_exited_process_fails_like_a_closed_pipe(
    guest: GuestClient, tmp_path: Path
) -> None:
    proc = await spawn(guest, ["true"], str(tmp_path), stdin_pipe=True)
    assert await proc.wait() == 0
    assert proc.stdin is not None
    with pytest.raises((ConnectionResetError, BrokenPipeError)):
        for _ in range(5):
            proc.stdin.write(b"x" * 1000)
            await proc.stdin.drain()
            await asyncio.sleep(0.05)
    await proc.stop()


@pytest.mark.parametrize(
    ("script", "returncode", "exit_code"),
    [("exit 0", 0, 0), ("exit 3", 3, 3), ("kill -TERM $$", -15, 143), ("kill -KILL $$", -9, 137)],
)
async def test_exit_codes(
    guest: GuestClient, tmp_path: Path, script: str, returncode: int, exit_code: int
) -> None:
    proc = await spawn(guest, ["/bin/sh", "-c", script], str(tmp_path))
    called: list[bool] = []
    proc.add_exit_callback(lambda: called.append(True))
    assert await proc.wait() == returncode
    assert proc.exited and proc.returncode == returncode
    await asyncio.sleep(0)
    assert called == [True]
    state = await guest.get_process(proc.process_id)
    assert state.exit_code == exit_code and state.returncode == returncode
    await proc.stop()
    assert await guest.signal(proc.process_id, signal.SIGTERM) is None  # already exited


async def test_stop_kills_a_process_that_ignores_sigterm(
    guest: GuestClient, tmp_path: Path
) -> None:
    # The group ignores SIGTERM (sleep inherits the ignored disposition).
    script = "trap '' TERM; echo ready; sleep 30; echo never"
    proc = await spawn(guest, ["/bin/sh", "-c", script], str(tmp_path))
    assert await proc.stdout.readline() == b"ready\n"
    started = time.monotonic()
    await proc.stop(0.5)
    took = time.monotonic() - started
    assert proc.exited and proc.returncode == -signal.SIGKILL
    assert 0.5 <= took < 5, took
    assert await proc.stdout.read() == b""  # EOF, nothing more
    await proc.stop()  # idempotent
    assert proc.stopped


async def test_stop_ends_a_process_that_obeys_sigterm_at_once(
    guest: GuestClient, tmp_path: Path
) -> None:
    proc = await spawn(guest, ["sleep", "30"], str(tmp_path))
    started = time.monotonic()
    await proc.stop(10)
    assert proc.returncode == -signal.SIGTERM
    assert time.monotonic() - started < 3


async def test_the_exit_is_known_while_the_output_is_unread(
    guest: GuestClient, tmp_path: Path
) -> None:
    # 6 MiB of output nobody reads: more than the readers and the window hold.
    code = "import sys; sys.stdout.write('x' * (6 << 20))"
    proc = await spawn(guest, [PY, "-c", code], str(tmp_path))
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    got = 0
    while chunk := await proc.stdout.read(1 << 20):
        got += len(chunk)
    assert got == 6 << 20  # and all of it still comes, once read
    await proc.stop()


def _rss() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


async def test_a_flooding_process_read_slowly_keeps_memory_bounded(
    guest: GuestClient, tmp_path: Path
) -> None:
    proc = await spawn(guest, ["/bin/sh", "-c", "yes | head -c 200000000"], str(tmp_path))
    assert await proc.stdout.readexactly(4) == b"y\ny\n"
    before = _rss()
    got = 0
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        chunk = await proc.stdout.read(64 * 1024)
        assert set(chunk) <= {ord("y"), ord("\n")}
        got += len(chunk)
        await asyncio.sleep(0.01)
    grown = _rss() - before
    await proc.stop(0.5)
    # Read ~10 MB in 1.5 s while the runner could push 200 MB: what we hold is the
    # readers' buffers and one HTTP/2 window, a few MiB.
    assert got < 50_000_000
    assert grown < 20 * 1024 * 1024, grown


async def test_spawn_failures_are_spawn_failed(guest: GuestClient, tmp_path: Path) -> None:
    with pytest.raises(SpawnFailed) as missing:
        await spawn(guest, ["no-such-program-here"], str(tmp_path))
    assert missing.value.exit_code == 127 and "not found" in str(missing.value)
    with pytest.raises(SpawnFailed) as no_dir:
        await spawn(guest, ["true"], str(tmp_path / "missing"))
    assert no_dir.value.exit_code == 126 and "does not exist" in str(no_dir.value)
    with pytest.raises(ValueError):
        await spawn(guest, ["true"], str(tmp_path), stdio="inherit")


async def test_merged_stdio_sends_stderr_to_stdout(guest: GuestClient, tmp_path: Path) -> None:
    proc = await spawn(
        guest, ["/bin/sh", "-c", "echo a; echo b >&2"], str(tmp_path), stdio="merged"
    )
    assert sorted((await proc.stdout.read()).split()) == [b"a", b"b"]
    assert await proc.stderr.read() == b""
    await proc.stop()


# -- files --------------------------------------------------------------------------------


async def test_files_round_trip_binary_5_mib(guest: GuestClient, runner: GuestRunner) -> None:
    data = os.urandom(5 << 20)
    target = runner.extra_root / "sub" / "blob.bin"
    assert await guest.write_file(str(target), data, mode=0o600) == len(data)
    assert target.read_bytes() == data and (target.stat().st_mode & 0o777) == 0o600
    assert await guest.read_file(str(target)) == data
    # Relative paths are the workspace's.
    assert await guest.write_file("rel.txt", b"hello") == 5
    assert (runner.workspace / "rel.txt").read_bytes() == b"hello"
    assert await guest.read_file("rel.txt") == b"hello"
    with pytest.raises(GuestError) as big:
        await guest.read_file(str(target), max_bytes=1 << 20)
    assert big.value.code == "RESOURCE_EXHAUSTED"


async def test_file_errors(guest: GuestClient, runner: GuestRunner) -> None:
    with pytest.raises(FileNotFoundError):
        await guest.read_file(str(runner.extra_root / "missing.txt"))
    secret = runner.outside / "secret.txt"
    secret.write_text("no")
    # --files-root: only the two roots.
    with pytest.raises(PermissionError):
        await guest.read_file(str(secret))
    with pytest.raises(PermissionError):
        await guest.write_file(str(runner.outside / "new.txt"), b"x")
    assert not (runner.outside / "new.txt").exists()
    with pytest.raises(GuestError) as is_dir:
        await guest.read_file(str(runner.extra_root))
    assert is_dir.value.code == "FAILED_PRECONDITION"


async def test_unconfined_files_and_the_runner_env(
    plain_guest: GuestClient, plain_runner: GuestRunner
) -> None:
    secret = plain_runner.outside / "anywhere.txt"
    secret.write_text("reachable")
    assert await plain_guest.read_file(str(secret)) == b"reachable"  # --no-confine-files
    # The default base environment is the runner's: spec.env shows through...
    code = "import json,os; print(json.dumps(dict(os.environ)))"
    proc = await plain_guest.spawn(ProcessSpec([PY, "-c", code], "/", {"ONLY": "1"}, None))
    env = json.loads(await proc.stdout.read())
    await proc.stop()
    assert env[SPEC_VAR[0]] == SPEC_VAR[1] and env["ONLY"] == "1"
    # ...unless the client clears it (env -i).
    async with await GuestClient.connect(unix_socket=plain_runner.socket, clear_env=True) as g:
        proc = await g.spawn(ProcessSpec([PY, "-c", code], "/", {"ONLY": "1", "B": "x=y"}, None))
        env = json.loads(await proc.stdout.read())
        await proc.stop()
    assert {k: v for k, v in env.items() if k != "LC_CTYPE"} == {"ONLY": "1", "B": "x=y"}


async def test_the_metadata_url_names_the_socket(
    plain_guest: GuestClient, plain_runner: GuestRunner
) -> None:
    proc = await plain_guest.spawn(ProcessSpec(["printenv", "AX_METADATA_URL"], "/", {}, None))
    url = (await proc.stdout.read()).decode().strip()
    await proc.stop()
    assert url == "http+unix://" + quote(plain_runner.socket, safe="")


# -- connecting ---------------------------------------------------------------------------


async def test_connect_times_out_when_nothing_listens(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(GuestError) as err:
        await GuestClient.connect(unix_socket=str(tmp_path / "nobody.sock"), timeout_s=0.3)
    assert err.value.code == "UNAVAILABLE" and "nobody.sock" in err.value.message
    assert time.monotonic() - started < 2
    with pytest.raises(ValueError):
        await GuestClient.connect()


async def test_a_lost_runner_ends_the_process_as_killed(tmp_path: Path) -> None:
    from .conftest import run_runner

    with run_runner(tmp_path, "--guest-env", "empty") as lone:
        guest = await GuestClient.connect(unix_socket=lone.socket, timeout_s=30)
        proc = await guest.spawn(ProcessSpec(["sleep", "30"], str(tmp_path), BASE_ENV, None))
        lone.proc.kill()  # SIGKILL: no goodbye (its guest processes die with it, atexit aside)
        assert await asyncio.wait_for(proc.wait(), 10) == -signal.SIGKILL
        assert proc.lost is not None and proc.lost.code == "UNAVAILABLE"
        assert await proc.stdout.read() == b""
        with pytest.raises(GuestError) as gone:
            await guest.get_process(proc.process_id)
        assert gone.value.code == "UNAVAILABLE"
        await proc.stop()
        await guest.close()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the runner could not end it: this host's group


# -- the supervisor over a guest ----------------------------------------------------------


def _on_line(event: Any, ctx: StreamContext[dict[str, Any]]) -> None:
    if event.get("type") == "assistant":
        ctx.transcript.assistant(event["text"])
    elif event.get("type") == "result":
        ctx.state["result"] = event["text"]


def _lines_adapter(code: str, **overrides: Any) -> Any:
    def result(ctx: ResultContext[dict[str, Any]]) -> AdapterResult:
        return AdapterResult(ctx.state.get("result"))

    options: dict[str, Any] = {
        "name": "guest-lines",
        "resolve_command": lambda inp: [PY, "-c", code],
        "build_args": lambda inp: [],
        "initial_state": dict,
        "stream": LinesMode(on_line=_on_line),
        "get_result": result,
        "prompt_via": "stdin",
    }
    options.update(overrides)
    return create_agent_adapter(**options)


def _input(tmp_path: Path, prompt: str, time_limit_s: float = 30) -> AdapterInput:
    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    return AdapterInput(
        prompt=prompt,
        agent=AgentSpec(name="guest-agent", adapter="test"),
        workspace=str(tmp_path / "work"),
        home=str(tmp_path / "home"),
        env={**BASE_ENV, "HOME": str(tmp_path / "home")},
        mcp_servers={},
        skills=[],
        time_limit_s=time_limit_s,
    )


ECHO_AGENT = """
import json, os, sys
prompt = sys.stdin.read()
print(json.dumps({"type": "assistant", "text": "in " + os.getcwd()}))
print(json.dumps({"type": "result", "text": prompt.upper()}))
"""


async def test_run_agent_with_the_guest_as_spawner(guest: GuestClient, tmp_path: Path) -> None:
    control = RunControl(marker="guest-run/1", grace_s=0.5, spawner=guest.spawn)
    out = await run_agent(_lines_adapter(ECHO_AGENT), _input(tmp_path, "hello guest"), control)
    assert not out.failed, out.error
    assert out.result == "HELLO GUEST" and out.exit_code == 0
    assert [e.text for e in out.transcript.entries if e.type == "assistant"] == [
        f"in {tmp_path / 'work'}"
    ]


async def test_run_agent_time_limit_stops_the_guest_process(
    guest: GuestClient, tmp_path: Path
) -> None:
    hang = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    control = RunControl(marker="guest-run/2", grace_s=0.3, spawner=guest.spawn)
    started = time.monotonic()
    out = await run_agent(_lines_adapter(hang), _input(tmp_path, "x", time_limit_s=0.5), control)
    assert out.error_kind == "timeout" and out.failed
    assert time.monotonic() - started < 5


def test_importing_the_client_loads_neither_grpclib_nor_protobuf() -> None:
    import subprocess

    code = (
        "import sys\n"
        "from axis_eval.execute.guest import GuestClient, GuestError, RemoteProcess\n"
        "print(sorted(m for m in sys.modules if m.startswith(('grpclib', 'google.protobuf'))))"
    )
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
