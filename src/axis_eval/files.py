"""Atomic file writes: a reader (or the next boot after a kill) sees the old file or the
new one, never half of one.

The one writer for the harness and the task runner. It imports the standard library only:
the task runner imports it at start-up, so it must stay cheap to load.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_chunks", "atomic_write_text"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_counter = itertools.count()  # next() is atomic under the GIL: safe from worker threads


def _create_temp(path: str) -> tuple[int, str]:
    """A new, exclusive, private (0600) temporary file next to ``path``.

    Like ``tempfile.mkstemp`` without its random-name machinery (a measurable share of a
    job's cost): the name holds our pid and a counter, and O_EXCL skips any leftover.
    """
    folder, _, name = path.rpartition("/")
    prefix = f"{folder}/.{name}.{os.getpid()}-"
    while True:
        tmp = f"{prefix}{next(_counter)}.tmp"
        try:
            return os.open(tmp, _FLAGS, 0o600), tmp
        except FileExistsError:  # a leftover of an earlier process with our pid
            continue


def atomic_write_bytes(
    path: str | Path, data: bytes, *, durable: bool = False, mode: int | None = None
) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    The rename makes the write atomic against a killed process: readers see the old file
    or the new one. ``durable`` adds an fsync of the file and of its folder (which holds
    the rename), which also survives a power loss but costs milliseconds per file, so it is
    kept for files that close a run. The file is private (0600) unless ``mode`` says
    otherwise; missing folders are created.
    """
    atomic_write_chunks(path, (data,), durable=durable, mode=mode)


def atomic_write_chunks(
    path: str | Path,
    chunks: Iterable[bytes],
    *,
    durable: bool = False,
    mode: int | None = None,
) -> None:
    """:func:`atomic_write_bytes` of the concatenated ``chunks``, written as they come: a
    large file (a long transcript) never has to be held whole in memory."""
    target = os.path.abspath(path)  # strings: cheaper than a Path per file
    try:
        fd, tmp = _create_temp(target)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd, tmp = _create_temp(target)
    try:
        try:
            pending: list[bytes] = []
            size = 0
            for data in chunks:  # small chunks gathered: one write each ~256 KiB, not each
                if len(data) >= _WRITE_BYTES:  # a large one as it is, never copied
                    if pending:
                        _write_all(fd, b"".join(pending))
                        pending, size = [], 0
                    _write_all(fd, data)
                    continue
                pending.append(data)
                size += len(data)
                if size >= _WRITE_BYTES:
                    _write_all(fd, b"".join(pending))
                    pending, size = [], 0
            if pending:
                _write_all(fd, b"".join(pending))  # (one chunk: join returns it, no copy)
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        folder = os.open(os.path.dirname(target), os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


_WRITE_BYTES = 256 * 1024
"""Chunks are gathered up to this much before a write (a manifest comes in hundreds of
small parts: a system call each cost more than copying them once)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # os.write on the descriptor: no file object per write
        view = view[os.write(fd, view) :]


def atomic_write_text(
    path: str | Path, text: str, *, durable: bool = False, mode: int | None = None
) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable, mode=mode)
