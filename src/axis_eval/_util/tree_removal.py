"""Removing a folder that an agent wrote, and that a hostile process may still be changing.

``shutil.rmtree`` is not enough for that on Python 3.11: it recurses once per level, so a
tree ~1,000 folders deep raises ``RecursionError`` even with ``ignore_errors=True`` (which
only silences ``OSError``), and the folder stays.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
from collections.abc import Callable

from axis_eval._util.beneath import DIR_FLAGS

__all__ = ["remove_tree"]

MAX_OPEN = 32
"""Folders open at once while removing (a descriptor and a listing each); a folder deeper
than this is moved up to the top folder and emptied from there."""
_Frame = tuple[int, "os._ScandirIterator[str]", str]
_MoveUp = Callable[[int, str], None]


def remove_tree(path: str | os.PathLike[str]) -> bool:
    """Remove ``path`` and everything under it, as far as it can; whether it is gone.

    Like ``shutil.rmtree(path, ignore_errors=True)``, and safe on a hostile tree:
    - no recursion, and at most :data:`MAX_OPEN` folders open at any depth;
    - each folder is opened from its parent's descriptor with ``O_NOFOLLOW``: one swapped
      for a symlink meanwhile is unlinked, never followed;
    - a folder its owner made unreadable (mode 000) is given mode 0700 first, through a
      descriptor of that very folder (the harness owns what its jobs made);
    - a folder on another filesystem (a mount a root agent made under ``sandbox: none``) is
      left alone, with what holds it;
    - never raises: what cannot be removed stays, and the result says so.
    """
    path = os.fspath(path)
    parent, name = os.path.split(path.rstrip("/"))
    if name in ("", ".", ".."):
        return False  # not a folder's own name: nothing is removed through it
    try:
        parent_fd = os.open(parent or ".", DIR_FLAGS)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return _gone(path)
    try:
        _remove_entry(parent_fd, name)
    except (OSError, ValueError):
        pass
    finally:
        os.close(parent_fd)
    return _gone(path)


def _gone(path: str) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):  # cannot even tell: not gone as far as anyone can say
        return False
    return False


def _remove_entry(parent_fd: int, name: str) -> None:
    try:
        top = _open_dir(name, parent_fd)
    except OSError:  # a file, a link, or gone
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=parent_fd)
        return
    try:
        _empty_tree(top, os.fstat(top).st_dev)
    finally:
        os.close(top)
    os.rmdir(name, dir_fd=parent_fd)


def _open_dir(name: str, dir_fd: int, dev: int | None = None) -> int:
    """A descriptor of the folder ``name`` in ``dir_fd`` (never through a symlink); one
    made unreadable is given 0700 first, unless it is on another filesystem than ``dev``."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        held = os.open(name, flags, dir_fd=dir_fd)
        try:  # the folder itself, whatever its name leads to by now
            if dev is not None and os.fstat(held).st_dev != dev:
                raise PermissionError(f"{name}: on another filesystem, left as it is")
            os.chmod(f"/proc/self/fd/{held}", 0o700)  # noqa: PTH101 -- a descriptor's path
        finally:
            os.close(held)
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def _empty_tree(top: int, dev: int) -> None:
    """Remove everything in the folder ``top``, the folders moved up to it included."""
    moved: list[str] = []
    serial = itertools.count()
    token = secrets.token_hex(6)  # names a hostile tree cannot have made in advance

    def move_up(fd: int, name: str) -> None:
        new = f".axis-removing-{token}-{next(serial)}"
        with contextlib.suppress(OSError):
            os.rename(name, new, src_dir_fd=fd, dst_dir_fd=top)
            moved.append(new)

    with contextlib.suppress(OSError):  # a listing that failed: what was moved still goes
        _empty(top, dev, move_up)
    while moved:
        name = moved.pop()
        with contextlib.suppress(OSError):
            _remove_moved(top, name, dev, move_up)


def _remove_moved(top: int, name: str, dev: int, move_up: _MoveUp) -> None:
    try:
        fd = _open_dir(name, top, dev)
    except OSError:  # swapped for a file, a link or a FIFO since it was moved
        os.unlink(name, dir_fd=top)
        return
    try:
        if os.fstat(fd).st_dev != dev:
            return
        _empty(fd, dev, move_up)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=top)


def _empty(start: int, dev: int, move_up: _MoveUp) -> None:
    """Remove what the folder ``start`` holds, depth first, with an explicit stack."""
    stack: list[_Frame] = [(start, os.scandir(start), "")]
    try:
        while stack:
            fd, entries, _ = stack[-1]
            entry = next(entries, None)
            if entry is None:
                entries.close()
                _, _, done = stack.pop()
                if stack:
                    os.close(fd)
                    with contextlib.suppress(OSError):
                        os.rmdir(done, dir_fd=stack[-1][0])
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if not is_dir:
                with contextlib.suppress(OSError):
                    os.unlink(entry.name, dir_fd=fd)
                continue
            if len(stack) >= MAX_OPEN:
                move_up(fd, entry.name)
                continue
            try:
                child = _open_dir(entry.name, fd, dev)
            except OSError:  # swapped for a file or a link, or gone
                with contextlib.suppress(OSError):
                    os.unlink(entry.name, dir_fd=fd)
                continue
            try:
                other_fs = os.fstat(child).st_dev != dev
                listing = None if other_fs else os.scandir(child)
            except OSError:
                listing = None
            if listing is None:
                os.close(child)
                continue
            stack.append((child, listing, entry.name))
    finally:
        for fd, entries, _ in stack:
            entries.close()
            if fd != start:
                os.close(fd)
