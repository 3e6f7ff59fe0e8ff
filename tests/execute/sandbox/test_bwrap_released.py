"""When a bwrap job's folders are released: every command ended by itself and its whole
PID namespace was seen gone (bwrap exits before its namespace's init does, so a daemon the
command left may run a moment longer than bwrap)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.process import ProcessSpec
from axis_eval.execute.sandbox import bwrap
from axis_eval.execute.sandbox.bwrap import BwrapSandbox
from axis_eval.execute.sandbox.probe import bwrap_problem
from axis_eval.execute.workspace import create_job_dirs
from helpers.system_parts import not_run


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    problem = bwrap_problem()
    if problem is not None:
        not_run("BWRAP SANDBOX TEST", problem)


def _box(tmp_path: Path) -> BwrapSandbox:
    dirs = create_job_dirs(str(tmp_path / "jobs"))
    config = tmp_path / "project"
    config.mkdir(exist_ok=True)
    return BwrapSandbox(dirs, SandboxPolicy(mode="bwrap"), config_dir=str(config))


async def _run(box: BwrapSandbox, script: str, *, wait: bool = True) -> str:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    proc = await box.spawn(ProcessSpec(["/bin/sh", "-c", script], box._dirs.work_dir, env, None))
    out = b""
    if wait:
        out = await proc.stdout.read()
        await proc.wait()
    await proc.stop(0.2)
    return out.decode()


async def test_commands_that_end_by_themselves_release_the_folders(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    box = _box(tmp_path)
    assert await _run(box, "echo setup") == "setup\n"
    assert await _run(box, "echo agent") == "agent\n"
    assert not box.released  # not before it is closed
    await box.close()
    assert box.released


async def test_a_daemon_left_running_is_gone_before_the_folders_are_released(
    tmp_path: Path,
) -> None:
    """The daemon keeps writing into the workspace; once the folders count as released,
    nothing writes there any more."""
    (tmp_path / "jobs").mkdir()
    box = _box(tmp_path)
    beat = Path(box._dirs.work_dir, "beat")
    script = (
        "(while :; do echo x >> beat; done) </dev/null >/dev/null 2>&1 &"
        " while [ ! -s beat ]; do :; done; echo started"
    )
    assert await _run(box, script) == "started\n"
    await box.close()
    assert box.released
    size = beat.stat().st_size
    time.sleep(0.1)
    assert beat.stat().st_size == size  # the namespace, daemon and all, had ended


async def test_a_command_that_had_to_be_stopped_does_not_release_them(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    box = _box(tmp_path)
    await _run(box, "trap '' TERM; sleep 30", wait=False)
    await box.close()
    assert not box.released


async def test_without_bwraps_report_of_its_init_nothing_is_released(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No descriptor for ``--info-fd``: the namespace's end cannot be seen, so the folders
    are not passed on (the job itself runs as ever)."""
    monkeypatch.setattr(bwrap, "_info_pipe", lambda: None)
    (tmp_path / "jobs").mkdir()
    box = _box(tmp_path)
    assert await _run(box, "echo ran") == "ran\n"
    await box.close()
    assert not box.released


async def test_a_namespace_still_ending_is_waited_for(tmp_path: Path) -> None:
    """``_namespace_over`` on a process that is still running: False after the wait; on one
    that has exited: True."""
    import asyncio

    proc = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        start = time.monotonic()
        assert not await bwrap._namespace_over(proc.pid)
        assert time.monotonic() - start >= bwrap.NAMESPACE_END_S * 0.9
    finally:
        proc.kill()
        await proc.wait()
    assert await bwrap._namespace_over(proc.pid)


async def test_a_namespace_not_seen_gone_does_not_release_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []

    async def never_over(pid: int) -> bool:
        seen.append(pid)
        return False

    monkeypatch.setattr(bwrap, "_namespace_over", never_over)
    (tmp_path / "jobs").mkdir()
    box = _box(tmp_path)
    assert await _run(box, "echo ran") == "ran\n"
    await box.close()
    assert not box.released
    assert len(seen) == 1 and seen[0] > 1  # bwrap's init, by its host pid


async def test_a_namespace_ending_within_the_wait_counts_as_over() -> None:
    import asyncio

    proc = await asyncio.create_subprocess_exec("sleep", "0.03")
    try:
        assert await bwrap._namespace_over(proc.pid)
    finally:
        await proc.wait()
