"""The process package's public API: the names it has always offered, and the seam one object
covers (start an argv with its env and cwd, stream its output, stop its whole tree)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import signal
import sys
import types
from pathlib import Path

import axis_eval.execute.process as process
from axis_eval.execute.process import (
    AgentProcess,
    ProcessSpec,
    is_subreaper,
    marked_pids,
    new_run_token,
    procfs,
    spawn,
    subreaper,
)

AGENTS = Path(__file__).resolve().parent.parent / "agents"

BEFORE_THE_SPLIT = (
    "MARKER_KEY",
    "SHELL_OUTPUT_CAP",
    "STREAM_LIMIT",
    "AgentProcess",
    "OrphanReaper",
    "ProcessSpec",
    "Sentinel",
    "ShellResult",
    "SpawnFailed",
    "become_subreaper",
    "forget_marker",
    "ignore_existing_processes",
    "is_subreaper",
    "kill_marked",
    "marked_pids",
    "new_run_token",
    "pidfd_child_watcher",
    "reap_orphans",
    "run_shell",
    "spawn",
)
"""What ``axis_eval.execute.process`` offered when it was one module."""


def test_every_public_name_resolves_and_none_is_a_module() -> None:
    for module in ("spawning", "markers", "kill", "reaping", "shell", "sentinel"):
        importlib.import_module(f"axis_eval.execute.process.{module}")  # sets package attrs
    assert set(BEFORE_THE_SPLIT) <= set(process.__all__)
    for name in process.__all__:
        assert not isinstance(getattr(process, name), types.ModuleType), name
    assert callable(spawn) and process.spawn is spawn


def _running(pid: int) -> bool:
    return procfs.is_running(pid)


async def test_one_object_starts_streams_and_stops_the_whole_tree(tmp_path: Path) -> None:
    marker = f"{new_run_token()}/job1"
    env = {**os.environ, "SEAM": "yes"}
    spec = ProcessSpec([sys.executable, str(AGENTS / "proc_tree.py")], str(tmp_path), env, marker)
    async with await spawn(spec) as proc:
        assert isinstance(proc, AgentProcess)
        tree = json.loads(await asyncio.wait_for(proc.stdout.readline(), 15))
        pids = [tree["pid"], tree["child"], tree["setsid"], tree["orphan"]]
        assert all(_running(pid) for pid in pids) and not proc.exited
        assert not proc.stopped
    assert proc.stopped and proc.returncode == -signal.SIGTERM
    assert [pid for pid in pids if _running(pid)] == []
    assert marked_pids(marker) == []


async def test_signal_reaches_the_group_and_kill_now_the_marked_rest(tmp_path: Path) -> None:
    marker = f"{new_run_token()}/job1"
    script = "trap 'echo got-usr1' USR1; echo ready; while :; do sleep 0.05; done"
    env = {"PATH": os.environ["PATH"]}
    proc = await spawn(ProcessSpec(["/bin/sh", "-c", script], str(tmp_path), env, marker))
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), 15) == b"ready\n"
        proc.signal(signal.SIGUSR1)
        assert await asyncio.wait_for(proc.stdout.readline(), 15) == b"got-usr1\n"
        proc.kill_now()
        assert await asyncio.wait_for(proc.wait(), 15) == -signal.SIGKILL
        assert marked_pids(marker) == []
        proc.signal(signal.SIGTERM)  # after the exit: a no-op, never someone else's group
    finally:
        await proc.stop(grace_s=0)


def test_a_subreaper_block_leaves_the_process_as_it_found_it() -> None:
    was = is_subreaper()
    with subreaper() as became:
        assert became and is_subreaper()
    assert is_subreaper() == was
