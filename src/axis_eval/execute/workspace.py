"""A job's isolated folders and environment.

Per job: ``<tmp>/axis-jobs-<pid>-<k>/<n>/{work,home,tmp}`` (one jobs folder per process).
``work`` is the agent's workspace; ``home`` is its HOME (a sibling, never the workspace),
holding ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` and ``GEMINI_CLI_HOME``; ``tmp`` is its
TMPDIR. The job's folder goes after the job: at once when the job left something in it, with
the run's other empty job folders at the run's end when it left them empty
(:meth:`JobDirs.release`).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from axis_eval._util.beneath import DIR_FLAGS
from axis_eval._util.tree_removal import remove_tree
from axis_eval.execute.process import procfs
from axis_eval.planning.models import JobSpec

PASSTHROUGH = ("PATH", "USER", "SHELL", "LANG", "TERM")
"""System essentials every agent gets from the parent environment."""

AGENT_CONFIG_DIRS = {
    "CLAUDE_CONFIG_DIR": ".claude",
    "CODEX_HOME": ".codex",
    "GEMINI_CLI_HOME": ".gemini",
}


@dataclass(frozen=True)
class JobDirs:
    """The folders of one job, as strings (they go into the environment and the argv; a
    Path per folder per job was a measurable share of an instant job's cost)."""

    root_dir: str
    work_dir: str
    home_dir: str
    tmp_dir: str

    @classmethod
    def under(cls, root: str | Path, workspace: str | Path | None = None) -> JobDirs:
        """The folders of the job rooted at ``root`` (the workspace defaults to ``work``)."""
        base = os.fspath(root)
        work = os.fspath(workspace) if workspace is not None else f"{base}/work"
        return cls(base, work, f"{base}/home", f"{base}/tmp")

    @property
    def root(self) -> Path:
        """The job's folder (holds the other three and the setup/teardown notes)."""
        return Path(self.root_dir)

    @property
    def workspace(self) -> Path:
        """The agent's working directory."""
        return Path(self.work_dir)

    @property
    def home(self) -> Path:
        """The agent's HOME."""
        return Path(self.home_dir)

    @property
    def tmp(self) -> Path:
        """The agent's TMPDIR."""
        return Path(self.tmp_dir)

    def remove(self) -> bool:
        """Delete everything the job left on disk (a tree any depth, never through a link);
        whether it is gone."""
        return remove_tree(self.root_dir)

    def release(self) -> bool:
        """The job is over. When it left its folders empty, they wait to be removed together
        with the other finished jobs' (:func:`remove_released`: at the run's end, or once
        :data:`RELEASED_CAP` jobs wait) and True; False when something is left, for
        :meth:`remove` to take at once (a workspace can be large).

        Why wait: ext4 without a journal (many VMs' disks, this project's machine's among
        them) avoids giving a new file or folder an inode number freed in the last one to
        six minutes, and checks every such free number of the block group, one by one,
        before it takes another. Four folders removed a job made each later job's folders
        and report files dearer the longer the run went on (docs/benchmarks.md, "Empty job
        folders removed at the run's end"). Nothing reuses a released folder, so a descriptor
        of it that the job handed to another job gives no way into a third; that other job
        can still write into it (as before while the first job ran), until it is removed.
        """
        if not self._left_empty():
            return False
        with _released_lock:
            _released.append(self)
        return True

    def _left_empty(self) -> bool:
        """Whether the job's folders hold nothing but each other (one listing each)."""
        inside = (self.work_dir, self.home_dir, self.tmp_dir)
        try:
            with os.scandir(self.root_dir) as entries:
                for entry in entries:
                    if entry.path not in inside or not entry.is_dir(follow_symlinks=False):
                        return False
            for folder in inside:
                with os.scandir(folder) as entries:
                    if next(entries, None) is not None:
                        return False
        except OSError:  # gone, or no longer a folder: remove() decides
            return False
        return True

    def remove_if_empty(self) -> bool:
        """Delete the folders when the job left them empty (four rmdir calls, no walk);
        False when something is left, for :meth:`remove` to deal with."""
        try:
            for folder in (self.work_dir, self.home_dir, self.tmp_dir, self.root_dir):
                os.rmdir(folder)  # noqa: PTH106 -- strings: no Path per folder per job
        except OSError:  # not empty, or no longer a plain folder
            return False
        return True


RELEASED_CAP = 1024
"""Finished jobs whose empty folders may wait for the run's end (four folders each: 4 KiB
of disk and an inode apiece) before all of them are removed."""
_released: list[JobDirs] = []
"""The empty folders of this process's finished jobs, waiting to be removed."""
_released_lock = threading.Lock()


def _forget_released_in_child() -> None:
    """A forked child's waiting folders are its parent's; the lock may have been held by a
    thread the child does not have."""
    global _released_lock
    _released.clear()
    _released_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_released_in_child)


def released_full() -> bool:
    """Whether :data:`RELEASED_CAP` finished jobs' folders wait: time to remove them."""
    return len(_released) >= RELEASED_CAP


def remove_released() -> int:
    """Remove the folders finished jobs left empty (:meth:`JobDirs.release`), and return
    how many jobs' folders went. A folder that is no longer empty (something wrote into
    it after its job) is removed whole. Safe from any thread; never raises (what cannot be
    removed stays, for the sweep of leftovers)."""
    done = 0
    while True:
        with _released_lock:  # one at a time: what is not reached stays queued
            if not _released:
                return done
            dirs = _released.pop()
        if not dirs.remove_if_empty():
            dirs.remove()
        done += 1


_serial = itertools.count()
RUN_PREFIX = "axis-jobs-"
"""The folder a process makes its jobs' folders in: ``<tmp>/axis-jobs-<pid>-<n>``."""
_run_folders: dict[tuple[int, str], str] = {}
"""This process's jobs folder under each base (a forked child makes its own)."""
_run_locks: dict[tuple[int, str], int] = {}
"""A descriptor of each, holding its ``flock`` for as long as this process lives."""
_RUN_NAME = re.compile(re.escape(RUN_PREFIX) + r"(\d+)-\d+")
STALE_AFTER_S = 600.0
"""A jobs folder whose process is gone, and in which no folder of its top two levels (the
job folders, their workspace, HOME and TMPDIR) changed for this long, is a leftover."""
_sweepers: list[threading.Thread] = []
"""The threads removing leftover jobs folders still running (one starts with each jobs folder
this process makes)."""


def _make_private(prefix: str) -> str:
    """A new folder ``<prefix><n>`` (mode 0700, never an existing name: mkdir() fails on
    any name that exists, a symlink included, and the next number is tried)."""
    while True:
        folder = f"{prefix}{next(_serial)}"
        try:
            os.mkdir(folder, 0o700)  # noqa: PTH102 -- strings: no Path per folder per job
            return folder
        except FileExistsError:  # left by an earlier process with our pid
            continue


def _run_folder(parent: str) -> str:
    """This process's jobs folder under ``parent``, made at its first job.

    One folder for all of a run's jobs, instead of each job's folder straight in the system
    tmp: a directory made directly in a big shared folder like ``/tmp`` can cost ten times
    the CPU of one made in a folder of our own (ext4 spreads top-level-like folders over
    its block groups; measured 0.38 against 0.075 ms a mkdir here, see
    docs/benchmarks.md). Removed at exit when empty.
    """
    key = (os.getpid(), parent)
    folder = _run_folders.get(key)
    if folder is None:
        folder = _run_folders[key] = _make_private(f"{parent}/{RUN_PREFIX}{os.getpid()}-")
        lock = _lock(folder)
        if lock is not None:
            _run_locks[key] = lock
        if len(_run_folders) == 1:
            atexit.register(_remove_run_folders)
        sweeper = threading.Thread(
            target=sweep_stale, args=(parent,), name="axis-stale-jobs-folders", daemon=True
        )
        _sweepers[:] = [*(t for t in _sweepers if t.is_alive()), sweeper]
        sweeper.start()
    return folder


def _remove_run_folders() -> None:
    remove_released()
    for key, folder in list(_run_folders.items()):
        if key[0] == os.getpid():
            with contextlib.suppress(OSError):  # not empty: a job of ours still holds it
                os.rmdir(folder)  # noqa: PTH106
            _unlock(key)


def _unlock(key: tuple[int, str]) -> None:
    lock = _run_locks.pop(key, None)
    if lock is not None:
        os.close(lock)


def _lock(folder: str) -> int | None:
    """A descriptor of ``folder`` holding its exclusive ``flock``, or None when another
    process holds it (or the folder cannot be opened or locked). The kernel drops the lock
    when the last holder dies, however it dies, and a process in another PID namespace that
    shares the folder holds it as well."""
    try:
        fd = os.open(folder, DIR_FLAGS)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _newest_change(folder: str, mtime: float) -> float:
    """The newest modification time of ``folder`` (``mtime``) and of the folders of its
    next two levels (each job's folder and its workspace, HOME and TMPDIR)."""
    newest = mtime
    try:
        jobs = list(os.scandir(folder))
    except OSError:
        return newest
    for job in jobs:
        if not job.is_dir(follow_symlinks=False):
            continue
        with contextlib.suppress(OSError):
            newest = max(newest, job.stat(follow_symlinks=False).st_mtime)
            for inner in os.scandir(job.path):
                if inner.is_dir(follow_symlinks=False):
                    newest = max(newest, inner.stat(follow_symlinks=False).st_mtime)
    return newest


def _in_use(folders: list[str]) -> set[str]:
    """Which of ``folders`` a running process here works in (its working directory lies
    inside): a process of a dead run that escaped its end still uses its workspace."""
    used: set[str] = set()
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return set(folders)  # cannot tell: keep them all
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")  # noqa: PTH115 -- strings, as above
        except OSError:
            continue
        for folder in folders:
            if cwd == folder or cwd.startswith(folder + "/"):
                used.add(folder)
    return used


def sweep_stale(parent: str) -> list[str]:
    """Remove the jobs folders under ``parent`` that processes left when they died without
    removing them (a SIGKILL, a second Ctrl-C, a Dask worker stopped by its nanny), and
    return those removed. A folder goes only when its name is ``axis-jobs-<pid>-<n>``, that
    pid runs nowhere here, it is a folder of this user, no folder of its top levels changed
    for :data:`STALE_AFTER_S`, no process holds its lock (a live process in another PID
    namespace does), and no running process here works inside it."""
    me, now = os.getpid(), time.time()
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return []
    stale: list[tuple[str, int]] = []
    for entry in entries:
        named = _RUN_NAME.fullmatch(entry.name)
        if named is None or int(named[1]) == me or procfs.is_running(int(named[1])):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            continue
        if now - _newest_change(entry.path, st.st_mtime) < STALE_AFTER_S:
            continue
        lock = _lock(entry.path)
        if lock is not None:  # None: held, its process lives
            stale.append((entry.path, lock))
    removed: list[str] = []
    used = _in_use([folder for folder, _ in stale]) if stale else set()
    for folder, lock in stale:
        try:
            if folder not in used and remove_tree(folder):
                removed.append(folder)
        finally:
            os.close(lock)
    return removed


def jobs_base(root: str) -> str:
    """The folder every job folder of every run lies in, for the job folder ``root``: what
    a sandbox hides (other runs' jobs too), with only the job's own folder given back."""
    parent = os.path.dirname(root.rstrip("/"))
    if os.path.basename(parent).startswith(RUN_PREFIX):
        return os.path.dirname(parent)
    return parent


def create_job_dirs(base: str | None = None) -> JobDirs:
    """Make a fresh, private ``axis-jobs-<pid>-<k>/<n>/{work,home,tmp}`` under ``base``
    (default: the system tmp).

    Like ``tempfile.mkdtemp`` (mode 0700, never an existing folder) without drawing a
    random name per job.
    """
    parent = os.path.abspath(base if base is not None else tempfile.gettempdir())
    try:
        root = _make_private(f"{_run_folder(parent)}/")
    except (FileNotFoundError, NotADirectoryError):  # removed (a tmp cleaner): a new one
        _run_folders.pop((os.getpid(), parent), None)
        _unlock((os.getpid(), parent))
        root = _make_private(f"{_run_folder(parent)}/")
    dirs = JobDirs.under(root)
    for folder in (dirs.work_dir, dirs.home_dir, dirs.tmp_dir):
        os.mkdir(folder)  # noqa: PTH102 -- as above
    # The agent config folders (AGENT_CONFIG_DIRS) are created by the adapters that use
    # them: three mkdir() calls per job are a measurable share of an instant job's cost.
    return dirs


def allowed_names(spec: JobSpec, adapter_env: Sequence[str]) -> list[str]:
    """Names copied from the parent environment: essentials, config/scenario ``env``, keys."""
    return list(dict.fromkeys([*PASSTHROUGH, *spec.env_pass, *adapter_env]))


def build_env(
    spec: JobSpec,
    dirs: JobDirs,
    parent: Mapping[str, str],
    *,
    adapter_env: Sequence[str] = (),
    isolation: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The job's environment: nothing from the parent but what is allowed by name."""
    env: dict[str, str] = {k: v for k, v in (isolation or {}).items()}
    for name, sub in AGENT_CONFIG_DIRS.items():
        env[name] = f"{dirs.home_dir}/{sub}"
    for name in allowed_names(spec, adapter_env):
        if name in parent:
            env[name] = parent[name]
    env.update(spec.env_set)
    env.update(
        {
            "HOME": dirs.home_dir,
            "TMPDIR": dirs.tmp_dir,
            "AXIS_CONFIG_DIR": spec.config_dir,
            "AXIS_SCENARIO": spec.scenario.key,
            "AXIS_AGENT": spec.agent.adapter,
            "AXIS_AGENT_NAME": spec.agent.name,
            "AXIS_RUN_INDEX": str(spec.run_index),
            "AXIS_RUN_COUNT": str(spec.run_count),
        }
    )
    env.setdefault("PATH", os.defpath)
    return env


def lifecycle_env(spec: JobSpec, job_env: Mapping[str, str]) -> dict[str, str]:
    """Setup/teardown environment: the job's plus ``AXIS_MODEL`` and ``AXIS_VARIANT`` when
    set (the phase runner adds ``AXIS_OUTPUT``, ``AXIS_WORKSPACE`` and ``AXIS_PHASE``)."""
    env = dict(job_env)
    if spec.agent.model:
        env["AXIS_MODEL"] = spec.agent.model
    if spec.scenario.variant:
        env["AXIS_VARIANT"] = spec.scenario.variant
    return env


def missing_env(names: Sequence[str], parent: Mapping[str, str]) -> list[str]:
    """Which of ``names`` are unset or empty in ``parent``."""
    return [n for n in names if not parent.get(n)]
