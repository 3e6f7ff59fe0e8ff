"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_counter = itertools.count()  # next() is atomic under the GIL: safe from worker threads


def _create_temp(path: Path) -> tuple[int, str]:
    """A new, exclusive, private (0600) temporary file next to ``path``.

    Like ``tempfile.mkstemp`` without its random-name machinery (a measurable share of a
    job's cost): the name holds our pid and a counter, and O_EXCL skips any leftover.
    """
    prefix = f"{path.parent}/.{path.name}.{os.getpid()}-"
    while True:
        tmp = f"{prefix}{next(_counter)}.tmp"
        try:
            return os.open(tmp, _FLAGS, 0o600), tmp
        except FileExistsError:  # a leftover of an earlier process with our pid
            continue


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    The rename makes the write atomic against a killed process: readers see the old file
    or the new one. ``durable`` adds an fsync, which also survives a power loss but costs
    milliseconds per file, so it is kept for files that close a run.
    """
    try:
        fd, tmp = _create_temp(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)
