"""The per-job cleanup shortcuts: skipped /proc scans, folders removed without a walk, cheap
temporary names. Each must keep what the slow path guaranteed."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from axis_eval import files as util_files
from axis_eval.execute import workspace as workspace_mod
from axis_eval.execute.process import (
    ProcessSpec,
    forget_marker,
    kill_marked,
    marked_pids,
    markers,
    new_run_token,
    pidfd_child_watcher,
    procfs,
    run_shell,
    spawn,
)
from axis_eval.execute.workspace import create_job_dirs
from axis_eval.files import atomic_write_text
from axis_eval.runs.store import ReportStore


def count_scans(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    scans: list[bytes] = []
    real = procfs.find

    def spy(entry: bytes, **kw: object) -> list[int]:
        scans.append(entry)
        return real(entry, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(procfs, "find", spy)
    return scans


async def test_a_clean_marker_is_not_rescanned_until_it_spawns_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = f"{new_run_token()}/job1"
    env = dict(os.environ)
    # Only live processes in the listing: a zombie or a process exiting during a scan (left
    # by other tests) makes the scan uncertain, which is not remembered (the next test).
    real_pids = procfs._pids
    monkeypatch.setattr(procfs, "_pids", lambda: [p for p in real_pids() if procfs.is_running(p)])
    proc = await spawn(ProcessSpec(["/bin/sh", "-c", "exit 0"], "/", env, marker))
    await proc.wait()
    await proc.stop(grace_s=1)  # scans: nothing left
    scans = count_scans(monkeypatch)
    await kill_marked(marker, 0.5)  # the job's final cleanup
    assert scans == [], "a marker found clean and not spawned since was scanned again"

    # A later spawn with the marker (a teardown) leaves a background process: the next
    # cleanup must scan again and kill it.
    result = await run_shell("sleep 30 & echo go", cwd="/", env=env, marker=marker, timeout_s=20)
    assert result.stdout == "go\n"
    assert len(marked_pids(marker)) == 1
    await kill_marked(marker, 0.5)
    assert len(scans) >= 1
    assert marked_pids(marker) == []
    forget_marker(marker)
    assert not markers.remembers(marker)


async def test_a_scan_that_saw_a_process_vanish_is_not_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A marked process that forks and exits while a scan reads /proc (a daemonizing double
    fork) leaves a child the listing missed: such a scan proves nothing, so the job's final
    cleanup must scan again."""
    marker = f"{new_run_token()}/job3"
    env = dict(os.environ)
    proc = await spawn(ProcessSpec(["/bin/sh", "-c", "exit 0"], "/", env, marker))
    await proc.wait()
    real_pids = procfs._pids
    # A pid listed by the scan that is gone when its environment is read.
    monkeypatch.setattr(procfs, "_pids", lambda: [*real_pids(), 2**22 + 12345])
    await proc.stop(grace_s=1)
    assert not procfs.last_find_certain
    assert not markers.known_clean(marker, None)
    monkeypatch.setattr(procfs, "_pids", real_pids)
    scans = count_scans(monkeypatch)
    await kill_marked(marker, 0.5)
    assert len(scans) >= 1, "an uncertain scan was taken as proof that nothing was left"
    assert marked_pids(marker) == []
    forget_marker(marker)


async def test_a_marker_never_spawned_here_is_always_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = f"{new_run_token()}/job2"
    scans = count_scans(monkeypatch)
    await kill_marked(marker, 0.5)
    await kill_marked(marker, 0.5)
    assert len(scans) == 2


def test_empty_job_folders_go_without_a_walk_and_full_ones_are_left_to_remove(
    tmp_path: Path,
) -> None:
    empty = create_job_dirs(str(tmp_path))
    assert empty.remove_if_empty()
    assert not empty.root.exists()

    used = create_job_dirs(str(tmp_path))
    (used.workspace / "out.txt").write_text("x")
    assert not used.remove_if_empty()
    assert (used.workspace / "out.txt").exists()
    used.remove()
    assert not used.root.exists()


def test_folders_a_job_left_empty_wait_for_the_run_and_anything_else_is_told(
    tmp_path: Path,
) -> None:
    workspace_mod.remove_released()  # what earlier tests' jobs released
    empty = create_job_dirs(str(tmp_path))
    assert empty.release()
    assert [empty.workspace.is_dir(), empty.home.is_dir(), empty.tmp.is_dir()] == [True] * 3

    configured = create_job_dirs(str(tmp_path))
    (configured.home / ".claude").mkdir()  # an empty folder is something left too
    noted = create_job_dirs(str(tmp_path))
    (noted.root / "setup.log").write_text("x")  # the phases' notes beside the folders
    linked = create_job_dirs(str(tmp_path))
    linked.tmp.rmdir()
    linked.tmp.symlink_to(tmp_path)  # a link where a folder was: never taken for one
    gone = create_job_dirs(str(tmp_path))
    gone.remove()
    for dirs in (configured, noted, linked, gone):
        assert not dirs.release(), dirs
        dirs.remove()
        assert not dirs.root.exists() and tmp_path.is_dir()

    late = create_job_dirs(str(tmp_path))
    assert late.release()
    # Written after its job (a descriptor another job was handed, a daemon under `none`):
    # nothing reuses the folder, and it goes whole with the others.
    (late.workspace / "sub").mkdir()
    (late.workspace / "sub" / "late.txt").write_text("x")
    assert empty.root.is_dir() and late.root.is_dir()
    assert workspace_mod.remove_released() == 2
    assert not empty.root.exists() and not late.root.exists()
    assert workspace_mod.remove_released() == 0


def test_released_folders_are_removed_at_the_cap_and_at_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace_mod.remove_released()
    monkeypatch.setattr(workspace_mod, "RELEASED_CAP", 3)
    released = [create_job_dirs(str(tmp_path)) for _ in range(3)]
    for n, dirs in enumerate(released):
        assert not workspace_mod.released_full()
        assert dirs.release(), n
    assert workspace_mod.released_full()
    assert workspace_mod.remove_released() == 3 and not workspace_mod.released_full()
    assert not any(dirs.root.exists() for dirs in released)
    # The exit hook removes what still waits before it removes the jobs folder itself.
    monkeypatch.setattr(workspace_mod, "_run_folders", {})
    last = create_job_dirs(str(tmp_path))
    assert last.release() and last.root.is_dir()
    workspace_mod._remove_run_folders()
    assert not last.root.parent.exists()


def test_a_forked_child_does_not_remove_its_parents_released_folders(tmp_path: Path) -> None:
    workspace_mod.remove_released()
    dirs = create_job_dirs(str(tmp_path))
    assert dirs.release()
    pid = os.fork()
    if pid == 0:  # the child: it has nothing of its parent's to remove
        os._exit(workspace_mod.remove_released())
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert dirs.root.is_dir()
    assert workspace_mod.remove_released() == 1 and not dirs.root.exists()


def test_a_removal_that_fails_leaves_the_other_waiting_folders_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace_mod.remove_released()
    waiting = [create_job_dirs(str(tmp_path)) for _ in range(3)]
    assert all(dirs.release() for dirs in waiting)
    real = workspace_mod.JobDirs.remove_if_empty

    def broken(self: workspace_mod.JobDirs) -> bool:
        raise RuntimeError("a bug")

    monkeypatch.setattr(workspace_mod.JobDirs, "remove_if_empty", broken)
    with pytest.raises(RuntimeError):
        workspace_mod.remove_released()
    monkeypatch.setattr(workspace_mod.JobDirs, "remove_if_empty", real)
    assert workspace_mod.remove_released() == 2  # the two not reached were still queued
    # The last released went first, and failed: it stays for the sweep of leftovers.
    assert [dirs.root.exists() for dirs in waiting] == [False, False, True]
    waiting[2].remove()


def test_a_child_forked_while_a_thread_held_the_queue_can_release(tmp_path: Path) -> None:
    workspace_mod.remove_released()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with workspace_mod._released_lock:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: no thread of its holds the lock
            dirs = create_job_dirs(str(tmp_path))
            os._exit(0 if dirs.release() and workspace_mod.remove_released() == 1 else 1)
        deadline = time.monotonic() + 10
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        if done[0] == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the child hung on its parent's lock")
        assert os.waitstatus_to_exitcode(done[1]) == 0
    finally:
        release.set()
        holder.join()


def test_atomic_write_skips_a_leftover_temp_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(util_files, "_counter", itertools.count(7))
    leftover = tmp_path / f".a.txt.{os.getpid()}-7.tmp"
    leftover.write_text("someone else's")
    target = tmp_path / "a.txt"
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert leftover.read_text() == "someone else's"
    assert (target.stat().st_mode & 0o777) == 0o600  # as mkstemp made them
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.txt", leftover.name])


def test_store_makes_nested_folders_once_and_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    store = ReportStore(tmp_path / "r")
    store.write_text("scenarios/k/agent/run-1/result.txt", "x")
    assert (tmp_path / "r/scenarios/k/agent/run-1/result.txt").read_text() == "x"
    store.write_text("blocked", "file")
    with pytest.raises(OSError):
        store.write_text("blocked/inner.txt", "y")


async def test_a_scan_skips_the_other_jobs_agents_but_still_finds_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our other agents (unreaped children spawned with another marker) are not read; the
    job's own processes, its setsid'd child included, still are, and are killed."""
    token = new_run_token()
    env = dict(os.environ)
    mine = f"{token}/job1"
    other = f"{token}/job2"
    # Job 1's agent starts a child in a new session (out of its group), then waits.
    a = await spawn(ProcessSpec(["/bin/sh", "-c", "setsid sleep 30 & sleep 30"], "/", env, mine))
    b = await spawn(ProcessSpec(["/bin/sh", "-c", "sleep 30"], "/", env, other))
    try:
        for _ in range(500):  # until the setsid'd child is there (10 s: a busy box)
            if len(marked_pids(mine)) == 3:
                break
            await asyncio.sleep(0.02)
        assert len(marked_pids(mine)) == 3
        reads: list[str] = []
        real_read = procfs._read

        def spy(path: str) -> bytes | None:
            reads.append(path)
            return real_read(path)

        monkeypatch.setattr(procfs, "_read", spy)
        await a.stop(grace_s=1)
        assert not any(p.startswith(f"/proc/{b.pid}/") for p in reads), "job 2's agent was read"
        assert any(p.startswith(f"/proc/{a.pid}/") for p in reads)
        assert marked_pids(mine) == []
        assert b.returncode is None and b.pid in marked_pids(other)
    finally:
        monkeypatch.undo()
        await b.stop(grace_s=1)
        await a.stop(grace_s=1)
        forget_marker(mine)
        forget_marker(other)
    assert marked_pids(other) == []


def test_job_folders_are_private_and_skip_a_name_left_by_another_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like mkdtemp (mode 0700, never an existing name) without a random name per job; all
    of a process's jobs go in one folder of its own (removed at exit when empty)."""
    monkeypatch.setattr(workspace_mod, "_serial", itertools.count(5))
    monkeypatch.setattr(workspace_mod, "_run_folders", {})
    pid = os.getpid()
    leftover = tmp_path / f"axis-jobs-{pid}-5"  # an earlier process's, with our pid
    leftover.mkdir()
    (leftover / "theirs").write_text("x")
    dirs = create_job_dirs(str(tmp_path))
    run_folder = tmp_path / f"axis-jobs-{pid}-6"
    assert dirs.root == run_folder / "7"
    assert (run_folder.stat().st_mode & 0o777) == 0o700
    assert (dirs.root.stat().st_mode & 0o777) == 0o700
    assert [dirs.workspace.is_dir(), dirs.home.is_dir(), dirs.tmp.is_dir()] == [True] * 3
    assert create_job_dirs(str(tmp_path)).root == run_folder / "8"  # the same jobs folder
    assert workspace_mod.jobs_base(dirs.root_dir) == str(tmp_path)
    assert workspace_mod.jobs_base(str(tmp_path / "elsewhere" / "job")) == str(
        tmp_path / "elsewhere"
    )
    assert (leftover / "theirs").read_text() == "x"
    assert dirs.remove_if_empty() and leftover.is_dir()
    workspace_mod._remove_run_folders()
    assert run_folder.is_dir()  # job 8 is still there
    (run_folder / "8").rename(tmp_path / "moved")
    workspace_mod._remove_run_folders()
    assert not run_folder.exists() and leftover.is_dir()
    # The jobs folder is not stat'ed for every job: one removed meanwhile (a tmp cleaner)
    # is made again when the next job's folder cannot be made in it.
    again = create_job_dirs(str(tmp_path))
    assert again.root.parent.name.startswith(f"axis-jobs-{pid}-") and again.workspace.is_dir()
    assert again.root.parent != run_folder


def _threads() -> int:
    """Threads alive now, but for an earlier test's sweep of leftover jobs folders (it may end
    at any moment)."""
    return sum(1 for t in threading.enumerate() if t.name != "axis-stale-jobs-folders")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12+ picks the pidfd watcher itself")
def test_runs_watch_children_through_pidfds_and_restore_the_watcher() -> None:
    """`pipeline.run` wraps the run in pidfd_child_watcher(): no waiter thread per child."""
    policy = asyncio.get_event_loop_policy()
    before = policy.get_child_watcher()

    async def child() -> tuple[int, int]:
        proc = await asyncio.create_subprocess_exec("sh", "-c", "sleep 0.3; exit 3")
        await asyncio.sleep(0.1)
        running = _threads()  # while the child runs
        return running, await proc.wait()

    with pidfd_child_watcher():
        assert isinstance(policy.get_child_watcher(), asyncio.PidfdChildWatcher)
        threads = _threads()
        running, code = asyncio.run(child())
    assert code == 3
    assert running == threads, "a thread was started to wait for the child"
    assert policy.get_child_watcher() is before


def test_proc_reads_return_whole_lists_longer_than_a_page() -> None:
    """/proc list files come a page per read: a read that stopped at the first short read
    would miss children, and with them orphans to reap."""
    sleepers = [subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL) for _ in range(900)]
    try:
        listed = procfs.children(os.getpid())
        assert listed is not None
        assert {p.pid for p in sleepers} <= set(listed)
        assert len(" ".join(map(str, listed))) > 4096  # more than one page
        assert procfs.process_info(sleepers[0].pid) is not None
        assert procfs.process_info(2**22 + 12345) is None  # no such process
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()


def test_machine_readings_serve_a_second_and_belong_to_one_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from axis_eval.execute import machine as machine_mod

    reads: list[int] = []
    monkeypatch.setattr(machine_mod.os, "getloadavg", lambda: (reads.append(1) or 3.14159, 0, 0))
    clock = [1000.0]
    monkeypatch.setattr(machine_mod.time, "monotonic", lambda: clock[0])
    state = machine_mod.MachineState()
    assert state.read() == (3.14, os.cpu_count())
    clock[0] += 0.9
    state.read()
    assert len(reads) == 1  # within the second: the same reading
    clock[0] += 0.2
    state.read()
    assert len(reads) == 2
    machine_mod.MachineState().read()  # another run's state reads for itself
    assert len(reads) == 3
