"""The run's job folders: a job's folders, left exactly as made and released by its sandbox,
serve a later job; anything a job did to them, even undone, gets the next job new ones."""

from __future__ import annotations

import array
import errno
import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from axis_eval.execute import job_folders
from axis_eval.execute.job_folders import JobFolders
from axis_eval.execute.workspace import JobDirs

SRC = Path(__file__).resolve().parents[2] / "src"
FS_IOC_SETFLAGS = (1 << 30) | (8 << 16) | (ord("f") << 8) | 2
FS_NODUMP_FL = 0x40


def _flag_nodump(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        buf = array.array("i", [0])
        fcntl.ioctl(fd, job_folders.FS_IOC_GETFLAGS, buf, True)
        buf[0] |= FS_NODUMP_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, buf, True)
    except OSError as exc:
        pytest.skip(f"no inode flags on this filesystem: {exc}")
    finally:
        os.close(fd)


def _set_xattr(path: str) -> None:
    try:
        os.setxattr(path, "user.note", b"left by a job")
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EPERM):
            pytest.skip(f"no user extended attributes here: {exc}")
        raise


def _write_and_remove(path: str) -> None:
    Path(path, "gone.txt").write_text("x")
    Path(path, "gone.txt").unlink()


def _replace_with_new_folder(path: str) -> None:
    os.rmdir(path)
    os.mkdir(path)


def _replace_with_symlink(path: str) -> None:
    os.rmdir(path)
    os.symlink("/", path)


TOUCHES: dict[str, tuple[str, Callable[[str], None], bool]] = {
    # name: (which folder, what is done to it, whether it leaves a trace)
    "a file left in the workspace": ("work", lambda p: Path(p, "left.txt").write_text("x"), True),
    "a file in the job's root": ("root", lambda p: Path(p, "notes.md").write_text("x"), True),
    "chmod of TMPDIR": ("tmp", lambda p: os.chmod(p, 0o777), True),
    "touch of the workspace": ("work", lambda p: os.utime(p, (1, 1)), True),
    "an extended attribute on HOME": ("home", _set_xattr, True),
    "an inode flag on the workspace": ("work", _flag_nodump, True),
    "TMPDIR replaced by a symlink": ("tmp", _replace_with_symlink, True),
    # Undone at once: in the same clock tick, nothing may be left to tell.
    "a file written and removed in HOME": ("home", _write_and_remove, False),
    "the workspace made again": ("work", _replace_with_new_folder, False),
}
"""What a hostile job may do to its folders."""


def _folder(dirs: JobDirs, which: str) -> str:
    return {"root": dirs.root_dir, "work": dirs.work_dir, "home": dirs.home_dir}.get(
        which, dirs.tmp_dir
    )


def _give_back(pool: JobFolders, dirs: JobDirs, *, released: bool = True) -> None:
    if not pool.give_back(dirs, released=released):
        dirs.remove()


def _trusted(pool: JobFolders) -> bool:
    [(_, marks)] = next(iter(pool._free.values()))
    return marks.trusted


def test_untouched_released_folders_serve_the_next_job_empty(tmp_path: Path) -> None:
    pool = JobFolders()
    first = pool.take(str(tmp_path), reusable=True)
    inode = os.stat(first.work_dir).st_ino
    os.listdir(first.work_dir)  # reading is not touching (only the access time changes)
    assert pool.give_back(first, released=True)
    assert pool.pooled == 1
    second = pool.take(str(tmp_path), reusable=True)
    assert second == first
    assert os.stat(second.work_dir).st_ino == inode
    assert sorted(os.listdir(second.root_dir)) == ["home", "tmp", "work"]
    assert [os.listdir(d) for d in (second.work_dir, second.home_dir, second.tmp_dir)] == [
        [],
        [],
        [],
    ]
    assert pool.pooled == 0
    _give_back(pool, second)
    pool.close()
    assert not second.root.exists()


def test_folders_not_released_are_removed(tmp_path: Path) -> None:
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=True)
    assert pool.give_back(dirs, released=False)  # empty: removed without a walk
    assert not dirs.root.exists()
    assert pool.pooled == 0


def test_folders_a_job_could_not_release_are_never_kept(tmp_path: Path) -> None:
    """``reusable=False`` (a ``none`` or docker job): even untouched, they are removed, and a
    pooled folder such a job takes is removed after it too."""
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=False)
    assert pool.give_back(dirs, released=True)
    assert not dirs.root.exists()
    kept = pool.take(str(tmp_path), reusable=True)
    _give_back(pool, kept)
    assert pool.pooled == 1
    again = pool.take(str(tmp_path), reusable=False)
    assert again == kept
    assert pool.give_back(again, released=True)
    assert not again.root.exists()
    assert pool.pooled == 0


@pytest.mark.parametrize("trusted", [False, True], ids=["first return", "later return"])
@pytest.mark.parametrize("touch", list(TOUCHES))
def test_a_touched_folder_is_never_kept(tmp_path: Path, touch: str, trusted: bool) -> None:
    """Every change is seen: on a folder's first return by looking into it, and later by its
    change times alone (the clock has left their tick by then)."""
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=True)
    if trusted:
        time.sleep(0.05)  # a few clock ticks after the folders were made
        _give_back(pool, dirs)
        assert _trusted(pool)
        assert pool.take(str(tmp_path), reusable=True) == dirs
    which, act, _ = TOUCHES[touch]
    act(_folder(dirs, which))
    _give_back(pool, dirs)
    assert pool.pooled == 0
    assert not dirs.root.exists()
    fresh = pool.take(str(tmp_path), reusable=True)
    assert fresh != dirs
    assert [os.listdir(d) for d in (fresh.work_dir, fresh.home_dir, fresh.tmp_dir)] == [[], [], []]
    _give_back(pool, fresh)
    pool.close()


@pytest.mark.parametrize("touch", list(TOUCHES))
def test_a_change_in_the_tick_the_folders_were_made_is_still_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touch: str
) -> None:
    """A kernel without fine timestamps stamps a change with the clock's tick, so a change
    in the tick the folders were made in leaves their times as they were. Simulated: each
    time stamped "now" reads as made. Until the clock has left that tick, a returning
    folder is looked into, and every change is still seen."""
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=True)
    real = job_folders._stat
    made = {folder: real(folder) for folder in job_folders._folders(dirs)}
    marks = job_folders.marks_of(dirs)

    def same_tick(folder: str) -> job_folders.Stat | None:
        now, then = real(folder), made.get(folder)
        if now is None or then is None:
            return now
        mtime = then[6] if now[6] >= then[6] else now[6]  # stamped now, or set by hand
        return (*now[:6], mtime, then[7])

    monkeypatch.setattr(job_folders, "_stat", same_tick)
    which, act, leaves_trace = TOUCHES[touch]
    act(_folder(dirs, which))
    _give_back(pool, dirs)
    if leaves_trace or pool.pooled == 0:
        assert pool.pooled == 0
        assert not dirs.root.exists()
    else:  # kept: then exactly as made, or nothing could tell the difference
        assert job_folders.marks_of(dirs) == marks
        assert [os.listdir(d) for d in (dirs.work_dir, dirs.home_dir, dirs.tmp_dir)] == [
            [],
            [],
            [],
        ]


def test_trust_waits_for_the_clock_to_leave_the_tick_of_the_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=True)
    newest = max(os.lstat(f).st_ctime_ns for f in job_folders._folders(dirs))
    monkeypatch.setattr(time, "clock_gettime_ns", lambda clock: newest)
    _give_back(pool, dirs)
    assert pool.pooled == 1
    assert not _trusted(pool)  # the clock still shows the tick of the newest change
    assert pool.take(str(tmp_path), reusable=True) == dirs
    monkeypatch.setattr(time, "clock_gettime_ns", lambda clock: newest + 1)
    _give_back(pool, dirs)
    assert _trusted(pool)
    pool.close()


def test_the_pool_is_bounded_and_closing_removes_it(tmp_path: Path) -> None:
    pool = JobFolders(limit=2)
    out = [pool.take(str(tmp_path), reusable=True) for _ in range(3)]
    for dirs in out:
        _give_back(pool, dirs)
    assert pool.pooled == 2
    assert [d.root.exists() for d in out] == [True, True, False]
    jobs_folder = out[0].root.parent
    pool.close()
    assert pool.pooled == 0
    assert list(jobs_folder.iterdir()) == []
    later = pool.take(str(tmp_path), reusable=True)
    assert pool.give_back(later, released=True)  # closed: nothing is kept any more
    assert not later.root.exists()


def test_a_forked_child_leaves_its_parents_pool_alone(tmp_path: Path) -> None:
    pool = JobFolders()
    dirs = pool.take(str(tmp_path), reusable=True)
    _give_back(pool, dirs)
    pid = os.fork()
    if pid == 0:  # the child: the pooled folders are not its own
        code = 0 if pool.pooled == 0 and pool.take(str(tmp_path)) != dirs else 1
        pool.close()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert dirs.root.exists()
    assert pool.pooled == 1
    pool.close()
    assert not dirs.root.exists()


def test_a_pool_never_closed_is_removed_at_exit(tmp_path: Path) -> None:
    script = f"""
import sys
from axis_eval.execute.job_folders import JobFolders
pool = JobFolders()
dirs = pool.take({str(tmp_path)!r}, reusable=True)
assert pool.give_back(dirs, released=True) and pool.pooled == 1
print(dirs.root_dir)
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    root = Path(done.stdout.strip())
    assert root.parent.parent == tmp_path
    assert not root.exists()
    assert list(tmp_path.iterdir()) == []  # the jobs folder went too
