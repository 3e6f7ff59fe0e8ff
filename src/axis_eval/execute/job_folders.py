"""The run's job folders: new private folders for a job, or the folders an earlier job
left exactly as they were made.

Why: making a job's four folders (its root, workspace, HOME and TMPDIR) and removing them
again was the largest single cost of a short job on this machine's ext4. It measured
0.5 ms of the harness's CPU a job (``docs/benchmarks.md``). A removed inode stays
"recently deleted" for one to six minutes. Until then, each new inode in its block group
first skips it, and every skip is a buffer-cache lookup. So a new folder costs more the
more folders were removed just before it, by this run, by the run before it or by any
other program.

A job's folders go back to the run's pool only when both of these hold:

- the job's sandbox says nothing the job started can still reach them
  (:attr:`~axis_eval.execute.sandbox.base.JobSandbox.released`). Only bwrap can say so:
  each command ended by itself, and its PID namespace was seen gone;
- each of the four folders is as it was made. That means the same inode, mode, owner,
  group and link count, and the same modification and change times. Any write changes
  them, even of a file removed since, and so does any ``chmod``, ``chattr``, ``setfacl`` or
  ``touch``. The access time is not compared, since listing a folder changes it.

The kernel stamps a change with the clock's current tick (a few milliseconds) unless it
keeps finer times (Linux 6.13 and later). So a change made in the same tick as the folders
were made would leave the times as they were. The first time a folder comes back, it is
therefore also looked into: the root must hold only the other three folders, those must
be empty, and the inode flags and extended attributes must be as made. From then on its
times alone tell, once the clock has left the tick they show.

A pooled folder keeps its path, so later runs of a report can name the same workspace
folder as an earlier one. Each job still starts with it empty. :meth:`JobFolders.close`
(the run's end, ``Sandboxes.aclose``) removes the pool; so does this process's exit, if a
caller never closes it.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import fcntl
import os
import tempfile
import time
import weakref
from dataclasses import dataclass

from axis_eval.execute.workspace import JobDirs, create_job_dirs

__all__ = ["JobFolders"]

_IOC_READ, _LONG = 2, 8
FS_IOC_GETFLAGS = (_IOC_READ << 30) | (_LONG << 16) | (ord("f") << 8) | 1
"""``_IOR('f', 1, long)`` as most Linux architectures encode it. Where the encoding differs,
the call fails the same way each time, and the change time still shows a ``chattr``."""

CLOCK_REALTIME_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5)
"""The clock the kernel stamps inode changes with (Linux's number; Python names it only on
some versions)."""

ROOT_ENTRIES = ["home", "tmp", "work"]
"""What a job's root holds as made (sorted)."""

POOL_LIMIT = 64
"""Folders kept for later jobs, per jobs folder. More than the jobs running at once is
never needed; the rest are removed."""

Stat = tuple[int, int, int, int, int, int, int, int]
"""Inode, device, mode, owner, group, link count, modification and change times (ns)."""


def _stat(path: str) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (
        st.st_ino,
        st.st_dev,
        st.st_mode,
        st.st_uid,
        st.st_gid,
        st.st_nlink,
        st.st_mtime_ns,
        st.st_ctime_ns,
    )


def _attributes(path: str, *, entries: bool) -> tuple[int, tuple[str, ...], list[str]] | None:
    """A folder's inode flags, extended attributes and (when ``entries``) entries; None
    when it is not a plain folder any more (one ``open`` that follows no symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        buf = array.array("i", [0])
        try:
            fcntl.ioctl(fd, FS_IOC_GETFLAGS, buf, True)
            flags = buf[0]
        except OSError as exc:  # no inode flags here: the same error each time
            flags = -(exc.errno or 1)
        try:
            xattrs = tuple(sorted(os.listxattr(fd)))
        except OSError as exc:  # none on this filesystem
            xattrs = (f"!{exc.errno}",)
        return flags, xattrs, (os.listdir(fd) if entries else [])
    except OSError:
        return None
    finally:
        os.close(fd)


def _folders(dirs: JobDirs) -> tuple[str, str, str, str]:
    return (dirs.root_dir, dirs.work_dir, dirs.home_dir, dirs.tmp_dir)


@dataclass
class _Marks:
    """What a job's four folders were when made (root first)."""

    stats: list[Stat]
    attributes: list[tuple[int, tuple[str, ...]]]
    trusted: bool = False
    """Looked into once, after the tick of the change times shown: the times alone tell."""


def marks_of(dirs: JobDirs) -> _Marks | None:
    """The marks of freshly made folders, or None when one cannot be read."""
    stats, attributes = [], []
    for folder in _folders(dirs):
        st = _stat(folder)
        seen = _attributes(folder, entries=False)
        if st is None or seen is None:
            return None
        stats.append(st)
        attributes.append(seen[:2])
    return _Marks(stats, attributes)


def untouched(dirs: JobDirs, marks: _Marks) -> bool:
    """Whether the job's four folders are as ``marks`` found them (see the module's
    docstring); looks into them until their times alone can tell, and says so in
    ``marks.trusted``."""
    folders = _folders(dirs)
    if [_stat(folder) for folder in folders] != marks.stats:
        return False
    if marks.trusted:
        return True
    try:
        tick = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    except OSError:  # no such clock: look into the folders each time
        tick = None
    for i, folder in enumerate(folders):
        seen = _attributes(folder, entries=True)
        if seen is None or seen[:2] != marks.attributes[i]:
            return False
        if (sorted(seen[2]) != ROOT_ENTRIES) if i == 0 else bool(seen[2]):
            return False
    # Whatever changes from now on is stamped at this tick or later.
    marks.trusted = tick is not None and tick > max(st[7] for st in marks.stats)
    return True


class JobFolders:
    """The job folders of one run (``Sandboxes.folders``): :meth:`take` them for a job,
    :meth:`give_back` them when it has ended, :meth:`close` at the run's end."""

    def __init__(self, limit: int = POOL_LIMIT) -> None:
        self._limit = limit
        self._free: dict[str, list[tuple[JobDirs, _Marks]]] = {}
        """Untouched folders by their jobs' parent folder, each with its marks."""
        self._out: dict[str, tuple[str, _Marks]] = {}
        """The folders of running jobs that may come back: root → (parent, marks)."""
        self._closed = False
        _all.add(self)

    def _forget(self) -> None:
        """In a forked child: the pooled folders are its parent's."""
        self._free, self._out = {}, {}

    def take(self, base: str | None = None, *, reusable: bool = False) -> JobDirs:
        """A job's folders under ``base`` (default: the system tmp): untouched ones from
        the pool, else new ones. ``reusable``: the job's sandbox may release them (bwrap),
        so :meth:`give_back` may keep them."""
        parent = os.path.abspath(base if base is not None else tempfile.gettempdir())
        free = self._free.get(parent)
        if free:
            dirs, marks = free.pop()
            if reusable:
                self._out[dirs.root_dir] = (parent, marks)
            return dirs  # a job that cannot give them back removes them
        dirs = create_job_dirs(parent)
        if reusable:
            made = marks_of(dirs)
            if made is not None:
                self._out[dirs.root_dir] = (parent, made)
        return dirs

    def give_back(self, dirs: JobDirs, *, released: bool) -> bool:
        """The job that had ``dirs`` has ended: keep them for a later job when ``released``
        (nothing of the job can reach them) and untouched, else remove them if empty.

        Returns False when something is left, for :meth:`JobDirs.remove` to deal with (in a
        thread: a large workspace takes a while).
        """
        entry = self._out.pop(dirs.root_dir, None)
        if entry is not None and released and not self._closed:
            parent, marks = entry
            free = self._free.setdefault(parent, [])
            if len(free) < self._limit and untouched(dirs, marks):
                _watch(self)
                free.append((dirs, marks))
                return True
        return dirs.remove_if_empty()

    @property
    def pooled(self) -> int:
        """How many untouched folders wait for a job."""
        return sum(len(free) for free in self._free.values())

    def close(self) -> None:
        """Remove the pooled folders; later jobs get new ones. Idempotent."""
        self._closed = True
        for free in self._free.values():
            while free:
                dirs, _ = free.pop()
                if not dirs.remove_if_empty():
                    dirs.remove()


_all: weakref.WeakSet[JobFolders] = weakref.WeakSet()
"""Every pool of this process (a forked child forgets what they hold)."""
_pools: weakref.WeakSet[JobFolders] = weakref.WeakSet()
"""The pools holding folders, removed at exit."""
_hooked = False


def _watch(pool: JobFolders) -> None:
    # Hooked at the first pooled folder, after workspace.py's hook (made at the first job
    # folder): exit hooks run last in, first out, so the pools are gone before the jobs
    # folder is removed.
    global _hooked
    if not _hooked:
        _hooked = True
        atexit.register(_close_all)
    _pools.add(pool)


def _close_all() -> None:
    for pool in list(_pools):
        with contextlib.suppress(OSError):
            pool.close()


def _after_fork() -> None:
    for pool in list(_all):
        pool._forget()
    _pools.clear()


os.register_at_fork(after_in_child=_after_fork)
