"""Agent processes with real children: stopping whole trees, reaping, dying with the harness."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.execute.process import (
    AgentProcess,
    OrphanReaper,
    ProcessSpec,
    Sentinel,
    SpawnFailed,
    become_subreaper,
    kill_marked,
    marked_pids,
    new_run_token,
    run_shell,
    spawn,
)
from helpers.processes import first_json_line

PY = sys.executable
AGENTS = Path(__file__).resolve().parent.parent / "agents"


def agent(name: str) -> str:
    return str(AGENTS / name)


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


def exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def until(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def read_json(stream: asyncio.StreamReader, timeout_s: float = 15.0) -> Any:
    return json.loads(await asyncio.wait_for(stream.readline(), timeout_s))


def spec(argv: list[str], marker: str, **kw: Any) -> ProcessSpec:
    return ProcessSpec(argv=argv, cwd=str(AGENTS), env=dict(os.environ), marker=marker, **kw)


@pytest.fixture
def marker() -> str:
    return f"{new_run_token()}/job1"


@pytest.fixture
async def reaper() -> AsyncIterator[OrphanReaper]:
    """Make this test process a subreaper that reaps adopted orphans, as the harness does."""
    assert become_subreaper()
    try:
        async with OrphanReaper() as active:
            yield active
    finally:
        become_subreaper(False)


@pytest.fixture
async def procs() -> AsyncIterator[list[AgentProcess]]:
    """Agents appended here are stopped at the end of the test, whatever happens."""
    started: list[AgentProcess] = []
    yield started
    for proc in started:
        await proc.stop(grace_s=0)


async def test_stop_removes_the_whole_tree_and_spares_other_jobs(
    tmp_path: Path, reaper: OrphanReaper, procs: list[AgentProcess]
) -> None:
    token = new_run_token()
    go = tmp_path / "go"
    a = await spawn(spec([PY, agent("proc_tree.py")], f"{token}/job1"))
    procs.append(a)
    # job10's marker extends job1's: only whole-entry matches may count
    b = await spawn(spec([PY, agent("proc_waiter.py"), str(go)], f"{token}/job10"))
    procs.append(b)
    tree = await read_json(a.stdout)
    b_info = await read_json(b.stdout)
    a_pids = [a.pid, tree["child"], tree["setsid"], tree["orphan"]]
    b_pids = [b.pid, b_info["child"]]
    assert tree["pid"] == a.pid
    assert sorted(marked_pids(f"{token}/job1")) == sorted(a_pids)
    assert sorted(marked_pids(f"{token}/job10")) == sorted(b_pids)

    await a.stop(grace_s=1)

    assert [pid for pid in a_pids if running(pid)] == []
    assert marked_pids(f"{token}/job1") == []
    assert a.returncode == -signal.SIGTERM
    assert await until(lambda: not any(exists(pid) for pid in a_pids)), "zombies not reaped"
    assert all(running(pid) for pid in b_pids)
    assert b.returncode is None
    go.write_text("go")
    assert await asyncio.wait_for(b.wait(), 30) == 0
    await a.stop(grace_s=1)  # idempotent


async def test_stop_escalates_to_sigkill(
    marker: str, reaper: OrphanReaper, procs: list[AgentProcess]
) -> None:
    proc = await spawn(spec([PY, agent("proc_stubborn.py")], marker))
    procs.append(proc)
    info = await read_json(proc.stdout)
    started = time.monotonic()
    await proc.stop(grace_s=1.0)
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 1.0 + 3.0
    assert proc.returncode == -signal.SIGKILL
    assert not running(info["child"])
    assert marked_pids(marker) == []


async def test_stop_wins_against_a_process_that_keeps_forking(
    marker: str, reaper: OrphanReaper, procs: list[AgentProcess]
) -> None:
    proc = await spawn(spec([PY, agent("proc_forker.py")], marker))
    procs.append(proc)
    assert await asyncio.wait_for(proc.stdout.readline(), 15) == b"ready\n"
    await proc.stop(grace_s=0.3)
    assert proc.returncode == -signal.SIGKILL
    assert marked_pids(marker) == []


async def test_stop_after_exit_is_quick_and_keeps_the_exit_code(marker: str) -> None:
    proc = await spawn(spec(["/bin/sh", "-c", "exit 7"], marker))
    assert await asyncio.wait_for(proc.wait(), 15) == 7
    await proc.stop(grace_s=5)
    await proc.stop(grace_s=5)
    assert proc.returncode == 7
    assert await proc.stdout.read() == b""


def test_sigkill_of_the_harness_takes_its_agents_along() -> None:
    harness = subprocess.Popen(
        [PY, agent("proc_harness.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        info = first_json_line(harness)
        agents = [info["pid"], info["child"], info["setsid"], info["orphan"]]
        assert all(running(pid) for pid in agents)
        assert running(info["sentinel"])
    finally:
        harness.kill()  # SIGKILL: no cleanup code of the harness runs
        harness.wait(timeout=10)
        assert harness.stdout is not None and harness.stderr is not None
        harness.stdout.close()
        harness.stderr.close()

    deadline = time.monotonic() + 5.0
    while any(running(pid) for pid in agents) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [pid for pid in agents if running(pid)] == []
    deadline = time.monotonic() + 5.0
    while running(info["sentinel"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(info["sentinel"]), "the sentinel did not exit after its sweep"


async def test_sentinel_close_sweeps_leftovers(reaper: OrphanReaper) -> None:
    token = new_run_token()
    sentinel = await Sentinel.start(token)
    proc = await spawn(spec([PY, agent("proc_tree.py")], f"{token}/job1"))
    try:
        tree = await read_json(proc.stdout)
        pids = [proc.pid, tree["child"], tree["setsid"], tree["orphan"]]
        await sentinel.close()
        assert await until(lambda: not any(running(pid) for pid in pids))
        assert await asyncio.wait_for(proc.wait(), 5) == -signal.SIGKILL
    finally:
        await sentinel.close()
        await proc.stop(grace_s=0)


async def test_orphan_reaper_reaps_orphans_but_not_asyncio_children(
    marker: str, reaper: OrphanReaper, procs: list[AgentProcess]
) -> None:
    proc = await spawn(spec(["/bin/sh", "-c", "(sleep 0.3 & echo $!); exec sleep 30"], marker))
    procs.append(proc)
    orphan = int(await asyncio.wait_for(proc.stdout.readline(), 15))
    assert await until(lambda: not exists(orphan)), "the orphan was not reaped"
    assert proc.returncode is None
    # asyncio's own children keep their exit status while the reaper runs
    result = await run_shell("exit 5", cwd="/", env=dict(os.environ), marker=marker, timeout_s=15)
    assert result.exit_code == 5
    await proc.stop(grace_s=1)
    assert proc.returncode == -signal.SIGTERM


async def test_env_is_exactly_the_given_env_plus_the_marker(
    marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXIS_TEST_CANARY", "must-not-leak")
    env = {"PATH": os.environ["PATH"], "ONLY_THIS": "1", "AXIS_JOB_MARKER": "overridden"}
    proc = await spawn(ProcessSpec([PY, agent("proc_env.py")], str(AGENTS), env, marker))
    try:
        got = await read_json(proc.stdout)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        await proc.stop(grace_s=0)
    assert "AXIS_TEST_CANARY" not in got
    assert got == {**env, "AXIS_JOB_MARKER": marker}


@pytest.mark.parametrize(
    "data", [b"hello\nworld\n", b"x" * 300_000, None], ids=["lines", "300k", "none"]
)
async def test_stdin_data_is_delivered_then_closed(marker: str, data: bytes | None) -> None:
    proc = await spawn(spec([PY, agent("proc_echo.py")], marker, stdin_data=data))
    try:
        out = await asyncio.wait_for(proc.stdout.read(), 15)
        assert await asyncio.wait_for(proc.wait(), 15) == 0
    finally:
        await proc.stop(grace_s=0)
    assert out == (data or b"")


async def test_spawn_failures_are_clear(marker: str, tmp_path: Path) -> None:
    with pytest.raises(SpawnFailed, match=r"^command not found: axis-no-such-command$") as info:
        await spawn(spec(["axis-no-such-command", "--version"], marker))
    assert info.value.exit_code == 127 and isinstance(info.value.__cause__, FileNotFoundError)
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(SpawnFailed, match=f"^permission denied: {re.escape(str(script))}$") as info:
        await spawn(spec([str(script)], marker))
    assert info.value.exit_code == 126
    with pytest.raises(SpawnFailed, match="working directory") as info:
        await spawn(ProcessSpec(["/bin/true"], str(tmp_path / "missing"), {}, marker))
    assert info.value.exit_code == 126


async def test_run_shell_captures_exit_code_and_output(marker: str, tmp_path: Path) -> None:
    result = await run_shell(
        "echo out; echo err >&2; pwd; exit 3",
        cwd=str(tmp_path),
        env=dict(os.environ),
        marker=marker,
        timeout_s=15,
    )
    assert (result.exit_code, result.timed_out) == (3, False)
    assert result.stdout == f"out\n{tmp_path}\n"
    assert result.stderr == "err\n"
    assert result.duration_ms >= 0


async def test_run_shell_timeout_kills_the_command_group(marker: str) -> None:
    started = time.monotonic()
    result = await run_shell(
        "echo started; sleep 30 & sleep 30",
        cwd="/",
        env=dict(os.environ),
        marker=marker,
        timeout_s=0.5,
        grace_s=1,
    )
    assert time.monotonic() - started < 5
    assert result.timed_out
    assert result.exit_code is None
    assert result.stdout == "started\n"
    assert marked_pids(marker) == []


async def test_run_shell_returns_when_the_shell_exits_despite_background_jobs(
    marker: str,
) -> None:
    started = time.monotonic()
    result = await run_shell(
        "sleep 30 & echo done", cwd="/", env=dict(os.environ), marker=marker, timeout_s=20
    )
    try:
        assert time.monotonic() - started < 5
        assert (result.exit_code, result.stdout, result.timed_out) == (0, "done\n", False)
        assert len(marked_pids(marker)) == 1  # the job's cleanup gets the background sleep
    finally:
        await kill_marked(marker, grace_s=1)
    assert marked_pids(marker) == []


async def test_run_shell_keeps_the_tail_of_huge_output(marker: str) -> None:
    result = await run_shell(
        "head -c 3000000 /dev/zero | tr '\\0' a; echo END",
        cwd="/",
        env=dict(os.environ),
        marker=marker,
        timeout_s=15,
    )
    assert result.exit_code == 0
    assert len(result.stdout) == 1024 * 1024
    assert result.stdout.endswith("aaaEND\n")
