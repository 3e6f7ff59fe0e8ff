"""Jobs folders a process left when it died without removing them (a SIGKILL, a second
Ctrl-C, a Dask worker stopped by its nanny) are removed by a later process's first job,
and only those: never a live process's folder, whatever its name and age."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from axis_eval.execute import workspace
from axis_eval.execute.workspace import RUN_PREFIX, STALE_AFTER_S, sweep_stale

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}

LEAVE = """
import os, sys
from axis_eval.execute.workspace import create_job_dirs
dirs = create_job_dirs(sys.argv[1])
open(dirs.work_dir + "/clone.txt", "w").write("a workspace")
print(dirs.root_dir, flush=True)
if sys.argv[2] == "die":
    os._exit(0)  # no exit hooks, as after a SIGKILL
sys.stdin.read()  # stay alive until the test closes stdin
"""


def _dead_pid() -> int:
    with subprocess.Popen(["true"]) as child:
        child.wait()
    return child.pid


def _start_live(base: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", LEAVE, str(base), "live"],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _age(folder: Path, seconds: float = STALE_AFTER_S + 60) -> None:
    """Make the jobs folder and the folders of its next two levels look untouched."""
    then = time.time() - seconds
    for path in sorted(folder.glob("*/*"), reverse=True) + sorted(folder.glob("*")) + [folder]:
        if path.is_dir() and not path.is_symlink():
            os.utime(path, (then, then))


def _left_by_a_dead_process(base: Path) -> Path:
    out = subprocess.run(
        [sys.executable, "-c", LEAVE, str(base), "die"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    run_folder = Path(out.strip()).parent
    assert run_folder.name.startswith(RUN_PREFIX)
    assert (Path(out.strip()) / "work" / "clone.txt").exists()
    return run_folder


def test_a_dead_processes_jobs_folder_goes_once_it_is_left_alone(tmp_path: Path) -> None:
    left = _left_by_a_dead_process(tmp_path)
    assert sweep_stale(str(tmp_path)) == []  # just made: its process might lock it yet,
    # or a process that escaped the run's end might still write in it
    assert left.exists()
    _age(left)
    assert sweep_stale(str(tmp_path)) == [str(left)]
    assert not left.exists()


def test_a_live_processes_folder_stays_whatever_its_name_and_age(tmp_path: Path) -> None:
    """Its lock keeps it, even under a dead process's name (as a process in another PID
    namespace sharing this tmp looks from here); once that process dies, it goes."""
    with _start_live(tmp_path) as live:
        try:
            assert live.stdout is not None
            root = Path(live.stdout.readline().strip())
            disguised = tmp_path / f"{RUN_PREFIX}{_dead_pid()}-0"
            root.parent.rename(disguised)  # the lock is on the folder, not its name
            _age(disguised)
            assert sweep_stale(str(tmp_path)) == []
            assert (disguised / root.name / "work" / "clone.txt").exists()
        finally:
            live.kill()
            live.wait()
    assert sweep_stale(str(tmp_path)) == [str(disguised)]
    assert not disguised.exists()


def test_only_this_users_old_folders_of_that_name_are_touched(tmp_path: Path) -> None:
    dead = _dead_pid()
    keep = [
        tmp_path / f"{RUN_PREFIX}{dead}",  # no run number: not one of ours
        tmp_path / f"{RUN_PREFIX}x-0",
        tmp_path / f"other-{dead}-0",
    ]
    for folder in keep:
        folder.mkdir()
        _age(folder)
    a_file = tmp_path / f"{RUN_PREFIX}{dead}-1"
    a_file.write_text("not a folder")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious.txt").write_text("x")
    link = tmp_path / f"{RUN_PREFIX}{dead}-2"
    link.symlink_to(target)
    mine = tmp_path / f"{RUN_PREFIX}{os.getpid()}-9"
    mine.mkdir()
    _age(mine)
    assert sweep_stale(str(tmp_path)) == []
    assert all(folder.exists() for folder in [*keep, a_file, link, mine])
    assert (target / "precious.txt").exists()


def test_a_new_process_sweeps_at_its_first_job(tmp_path: Path) -> None:
    """End to end: a run killed by SIGKILL leaves its jobs folder; the next process's first
    job folder starts the sweep, which removes it (the process's own folder stays)."""
    with _start_live(tmp_path) as killed:
        assert killed.stdout is not None
        left = Path(killed.stdout.readline().strip()).parent
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert left.exists()
    _age(left)
    script = f"""
from axis_eval.execute import workspace
dirs = workspace.create_job_dirs({str(tmp_path)!r})
for sweeper in workspace._sweepers:
    sweeper.join(30)
dirs.remove()
"""
    out = subprocess.run(
        [sys.executable, "-c", script], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert not left.exists()
    assert list(tmp_path.iterdir()) == []  # the new process's own folder went at its exit


def test_this_process_locks_its_own_jobs_folder(tmp_path: Path) -> None:
    dirs = workspace.create_job_dirs(str(tmp_path))
    run_folder = dirs.root.parent
    assert workspace._lock(str(run_folder)) is None  # held by this process
    dirs.remove()


def test_a_change_inside_a_job_folder_keeps_it(tmp_path: Path) -> None:
    """The jobs folder's own time changes only when a job folder comes or goes: a write in
    a workspace counts too."""
    left = _left_by_a_dead_process(tmp_path)
    _age(left)
    [job] = list(left.iterdir())
    (job / "work" / "later.txt").write_text("still written")  # the workspace changes now
    assert sweep_stale(str(tmp_path)) == []
    assert left.exists()


def test_a_process_working_inside_keeps_it(tmp_path: Path) -> None:
    """A process of the dead run that escaped its end, still working in its workspace."""
    left = _left_by_a_dead_process(tmp_path)
    [job] = list(left.iterdir())
    with subprocess.Popen(["sleep", "30"], cwd=job / "work") as straggler:
        try:
            _age(left)
            assert sweep_stale(str(tmp_path)) == []
            assert (job / "work" / "clone.txt").exists()
        finally:
            straggler.kill()
            straggler.wait()
    assert sweep_stale(str(tmp_path)) == [str(left)]


def test_a_folder_named_for_a_running_process_stays_without_its_lock(tmp_path: Path) -> None:
    with subprocess.Popen(["sleep", "30"], cwd="/") as running:
        try:
            named = tmp_path / f"{RUN_PREFIX}{running.pid}-0"
            (named / "1" / "work").mkdir(parents=True)
            _age(named)
            assert sweep_stale(str(tmp_path)) == []
            assert named.exists()
        finally:
            running.kill()
            running.wait()
    assert sweep_stale(str(tmp_path)) == [str(named)]


def test_a_jobs_folder_made_again_is_locked_and_the_old_lock_let_go(tmp_path: Path) -> None:
    """A tmp cleaner removes this process's jobs folder: the next job makes a new one, locked
    as the first was, and the first one's descriptor is closed (none pile up)."""
    import shutil

    first = workspace.create_job_dirs(str(tmp_path))
    first.remove()
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        shutil.rmtree(first.root.parent)
        again = workspace.create_job_dirs(str(tmp_path))
        assert again.root.parent != first.root.parent
        assert workspace._lock(str(again.root.parent)) is None  # held by this process
        again.remove()
        first = again
    assert len(os.listdir("/proc/self/fd")) == fds
