"""Processes spawned without a job marker (a task runner's): a new group in the caller's
session, inherited or merged stdio, and a tree-stop that covers the process group."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from axis_eval.execute.process import (
    MARKER_KEY,
    ProcessSpec,
    Stdio,
    group_running,
    kill_group,
    procfs,
    spawn,
)

PY = sys.executable

# Prints its pid and a child's (which ignores SIGTERM, like the leader), then waits.
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(os.getpid(), child.pid, os.environ.get("AXIS_JOB_MARKER", "-"), flush=True)
print("to stderr", file=sys.stderr, flush=True)
time.sleep(60)
"""


def _group_spec(
    argv: list[str], cwd: Path, stdio: Stdio = "pipes", *, stdin_pipe: bool = False
) -> ProcessSpec:
    env = {k: v for k, v in os.environ.items() if k != MARKER_KEY}
    return ProcessSpec(
        argv, str(cwd), env, None, stdin_pipe=stdin_pipe, new_session=False, stdio=stdio
    )


async def test_a_marker_less_process_leads_a_group_in_our_session(tmp_path: Path) -> None:
    proc = await spawn(_group_spec([PY, "-c", STUBBORN], tmp_path, "merged"))
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 15)
        leader, child, marker = line.split()
        assert int(leader) == proc.pid == proc.pgid == os.getpgid(proc.pid)
        assert os.getsid(proc.pid) == os.getsid(0)  # not a new session
        assert marker == b"-"  # the environment is exactly the one given
        assert await asyncio.wait_for(proc.stdout.readline(), 15) == b"to stderr\n"  # merged
        assert await proc.stderr.read() == b""
        assert proc.marker is None and group_running(proc.pgid)
        kills: list[float] = []
        started = time.monotonic()
        await proc.stop(0.5, on_kill=lambda: kills.append(time.monotonic() - started))
    finally:
        await proc.stop(0)
    assert len(kills) == 1 and kills[0] >= 0.5  # after the grace, before the SIGKILL
    assert proc.returncode == -9 and not procfs.is_running(int(child))
    assert not group_running(proc.pgid)


async def test_inherited_stdio_reads_as_empty_and_stops_without_a_pipe_drain(
    tmp_path: Path,
) -> None:
    proc = await spawn(_group_spec([PY, "-c", "import time; time.sleep(60)"], tmp_path, "inherit"))
    assert await proc.stdout.read() == b"" and await proc.stderr.read() == b""
    assert proc.stdin is None
    started = time.monotonic()
    called: list[bool] = []
    await proc.stop(5, on_kill=lambda: called.append(True))
    assert time.monotonic() - started < 1.0  # SIGTERM ends it; no pipe to wait for
    assert proc.returncode == -15 and called == []


async def test_kill_group_reports_whether_sigkill_was_needed(tmp_path: Path) -> None:
    proc = await spawn(_group_spec([PY, "-c", "import time; time.sleep(60)"], tmp_path))
    assert await kill_group(proc.pgid, 5) is False
    await proc.wait()
    assert await kill_group(proc.pgid, 5) is False  # an empty group: nothing to signal
    await proc.stop(0)


async def test_inherited_stdin_cannot_be_fed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="inherited stdin"):
        await spawn(_group_spec(["/bin/true"], tmp_path, "inherit", stdin_pipe=True))
