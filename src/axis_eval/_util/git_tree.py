"""A checkout's files as untrusted input: symlinks leading out, very deep trees, and a
lock for runs sharing a cache. No recursion anywhere: a hostile tree may be thousands of
folders deep (Python's own ``rmtree``, ``rglob`` and ``copytree`` recurse per level)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LockTimeout", "TooDeep", "discard", "drop_outside_links", "locked", "remove"]


class TooDeep(Exception):
    """A folder nested deeper than allowed (``folder``: its path in the tree)."""

    def __init__(self, folder: str) -> None:
        super().__init__(folder)
        self.folder = folder


class LockTimeout(Exception):
    """The lock stayed held by another process for the whole wait."""


def drop_outside_links(path: Path, max_depth: int) -> tuple[str, ...]:
    """Delete every symlink under ``path`` whose target leaves it, points into its
    ``.git`` or loops (never following one); their paths in it, sorted.

    Raises:
        TooDeep: a folder nested more than ``max_depth`` deep (nothing more is walked).
    """
    top = path.resolve()
    dropped: list[str] = []
    stack = [(top, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth > max_depth:
            raise TooDeep(folder.relative_to(top).as_posix())
        with os.scandir(folder) as entries:
            for entry in entries:
                entry_path = Path(entry.path)
                if folder == top and entry.name == ".git":
                    continue
                if entry.is_symlink():
                    if not _stays_inside(entry_path, top):
                        entry_path.unlink()
                        dropped.append(entry_path.relative_to(top).as_posix())
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((entry_path, depth + 1))
    return tuple(sorted(dropped))


def _stays_inside(link: Path, top: Path) -> bool:
    try:
        target = link.resolve()
    except (OSError, RuntimeError):  # a loop
        return False
    return target.is_relative_to(top) and not target.is_relative_to(top / ".git")


def remove(path: Path) -> None:
    """Delete ``path``: a file or symlink, or a folder and everything in it."""
    if not path.is_dir() or path.is_symlink():
        path.unlink()
        return
    stack, folders = [str(path)], []
    while stack:
        folder = stack.pop()
        folders.append(folder)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    Path(entry.path).unlink()
    for folder in reversed(folders):  # children were found after their parents
        Path(folder).rmdir()


def discard(path: Path) -> None:
    """:func:`remove`, if ``path`` is there, never raising."""
    with contextlib.suppress(OSError):
        if path.exists() or path.is_symlink():
            remove(path)


@contextlib.contextmanager
def locked(lock_file: Path, wait_s: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``lock_file`` (made if missing) while inside.

    Raises:
        LockTimeout: another holder kept it for ``wait_s`` seconds.
    """
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise LockTimeout(str(lock_file)) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock
