"""Opening what lies beneath a folder an agent controls, one level at a time, never through
a link: what the removal of a job's folder, the artifact collection and the ACP file
requests share. A path checked once and then opened by name can lead elsewhere by the time
it is opened; a descriptor opened from its parent's with ``O_NOFOLLOW`` cannot."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence

__all__ = ["DIR_FLAGS", "READ_FLAGS", "WRITE_FLAGS", "descend", "open_regular", "read_at_most"]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Never through a link, never waiting on a FIFO, never taking a terminal as ours.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def descend(start: int, folders: Sequence[str], *, create: bool = False) -> int:
    """A new descriptor of the folder ``start/folders[0]/…`` (``start`` itself, duplicated,
    for none), each level opened from the one above with ``O_NOFOLLOW``; ``create``: a
    missing folder is made. The caller closes it.

    Raises:
        OSError: a level is missing (and not created), not a folder, or a link.
    """
    fd = os.dup(start)
    try:
        for folder in folders:
            try:
                inner = os.open(folder, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder, dir_fd=fd)
                inner = os.open(folder, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(
    start: int, parts: Sequence[str], flags: int = READ_FLAGS, *, create: bool = False
) -> int:
    """A descriptor of the regular file ``start/parts…`` (folders reached by
    :func:`descend`, ``create`` passed on; the file opened with ``flags``, mode 0666 less
    the umask when made). The caller closes it.

    Raises:
        OSError: not reached without a link, or not a regular file (``EINVAL``).
    """
    *folders, name = parts
    folder = descend(start, folders, create=create)
    try:
        fd = os.open(name, flags, 0o666, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", "/".join(parts))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at_most(fd: int, limit: int) -> bytes | None:
    """What ``fd`` holds from where it is, or None when that is more than ``limit`` bytes
    (at most ``limit`` + 1 bytes are read to tell)."""
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = os.read(fd, min(1 << 20, limit - got + 1))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
    return None
