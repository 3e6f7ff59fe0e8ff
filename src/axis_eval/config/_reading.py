"""Read a config or scenario file safely: regular files only, never more than the size cap.

A scenarios folder is the user's, and anything can sit in it: a FIFO (reading blocks until
someone writes), a symlink to ``/dev/zero`` (reading never ends), a symlink loop, a
folder with a data file's name. Only a regular file is read; it is checked with ``stat``
before it is opened and again (``fstat``) after, the open is non-blocking so a FIFO swapped
in between cannot hang it, and at most :data:`MAX_FILE_BYTES` + 1 bytes are read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from axis_eval.config._limits import LIMITS_HINT, MAX_FILE_BYTES
from axis_eval.errors import ConfigError

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def shown(path: object) -> str:
    """``path`` as printable UTF-8 text: bytes of a name that is not UTF-8 become ``\\xNN``."""
    text = str(path)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that no file name decodes to
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def is_dir(path: Path) -> bool:
    """``path.is_dir()``, False for a name no file system can hold (NUL, lone surrogate)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def lexists(path: Path) -> bool:
    """Whether anything has the name ``path``: a file, a FIFO, a broken symlink or a loop."""
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def what_is(mode: int) -> str:
    """``a FIFO (named pipe)``, ``a folder``, …: what a file that is not regular is."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_regular(path: Path, kind: str) -> os.stat_result:
    """The ``stat`` of ``path`` (symlinks followed) if it is a regular file within the cap.

    Raises:
        ConfigError: missing, a broken symlink or a symlink loop, not a regular file,
            unreadable, or larger than :data:`MAX_FILE_BYTES`.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError as exc:
        if os.path.lexists(path):
            raise ConfigError(f"{kind} file {shown(path)} is a broken symlink") from exc
        raise ConfigError(f"{kind} file not found: {shown(path)}") from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{kind} file {shown(path)} is a symlink loop") from exc
        raise ConfigError(f"cannot read {kind} file {shown(path)}: {exc.strerror}") from exc
    except ValueError as exc:  # a name no file system can hold (NUL, a lone surrogate)
        raise ConfigError(f"{kind} file {shown(path)} has an invalid name") from exc
    _check_info(info, path, kind)
    return info


def _check_info(info: os.stat_result, path: Path, kind: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(
            f"{kind} file {shown(path)} is {what_is(info.st_mode)}, not a regular file"
        )
    if info.st_size > MAX_FILE_BYTES:
        raise ConfigError(_too_big(path, kind), hint=LIMITS_HINT)


def _too_big(path: Path, kind: str) -> str:
    return f"{kind} file {shown(path)} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"


def read_text(path: Path, kind: str) -> str:
    """The UTF-8 text of the regular file ``path``, read under the size cap.

    Raises:
        ConfigError: see :func:`check_regular`; also for text that is not UTF-8.
    """
    check_regular(path, kind)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"cannot read {kind} file {shown(path)}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as handle:
        _check_info(os.fstat(handle.fileno()), path, kind)  # not swapped since the stat
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read {kind} file {shown(path)}: {exc.strerror}") from exc
    if len(data) > MAX_FILE_BYTES:  # it grew since the stat
        raise ConfigError(_too_big(path, kind), hint=LIMITS_HINT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{kind} file is not UTF-8 text: {shown(path)}") from exc
