"""File reads and writes for the guest FileSystemService."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ax_task_runner._guest.errors import FileError

CHUNK = 64 * 1024


def _os_error(exc: OSError, path: Path) -> FileError:
    if isinstance(exc, FileNotFoundError):
        return FileError("not_found", f"{path}: no such file or directory")
    if isinstance(exc, PermissionError):
        return FileError("permission", f"{path}: permission denied")
    if isinstance(exc, IsADirectoryError):
        return FileError("precondition", f"{path}: is a directory")
    if isinstance(exc, NotADirectoryError):
        return FileError("precondition", f"{path}: a parent is not a directory")
    return FileError("precondition", f"{path}: {exc.strerror or exc}")


class FileAccess:
    """Resolves paths against the workspace and, when confined, keeps them inside ``roots``
    (default: the workspace alone)."""

    def __init__(
        self, workspace: Path, *, confine: bool = True, roots: Sequence[Path] | None = None
    ) -> None:
        self.workspace = workspace
        self.confine = confine
        self.roots = list(roots) if roots else [workspace]

    def resolve(self, path: str) -> Path:
        if not path:
            raise FileError("invalid", "path is required")
        if "\x00" in path:
            raise FileError("invalid", "path contains a NUL byte")
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        candidate = Path(os.path.normpath(candidate))
        if self.confine:
            real = os.path.realpath(candidate)
            roots = [os.path.realpath(r) for r in self.roots]
            if not any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
                where = (
                    f"the guest workspace {roots[0]}"
                    if self.roots == [self.workspace]
                    else "the folders allowed (" + ", ".join(roots) + ")"
                )
                raise FileError("permission", f"{path}: outside {where}")
        return candidate

    def read_chunks(self, path: str, mode: int) -> Iterator[bytes]:
        target = self.resolve(path)
        if mode and not target.exists():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode & 0o7777)
                os.fchmod(fd, mode & 0o7777)
                os.close(fd)
            except FileExistsError:
                pass
            except OSError as exc:
                raise _os_error(exc, target) from exc
            return
        try:
            fh = open(target, "rb")  # noqa: SIM115 - closed by the generator below
        except OSError as exc:
            raise _os_error(exc, target) from exc
        with fh:
            while True:
                try:
                    data = fh.read(CHUNK)
                except OSError as exc:
                    raise _os_error(exc, target) from exc
                if not data:
                    return
                yield data


class FileWriter:
    """One WriteFile call: opened by the first message, then fed chunks."""

    def __init__(self, access: FileAccess, path: str, mode: int, seek_offset: int) -> None:
        if seek_offset < 0:
            raise FileError("invalid", "seek_offset must not be negative")
        self.target = access.resolve(path)
        self.written = 0
        perms = (mode & 0o7777) or 0o644
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if seek_offset == 0 else 0)
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            created = not self.target.exists()
            self._fd = os.open(self.target, flags, perms)
        except OSError as exc:
            raise _os_error(exc, self.target) from exc
        try:
            if created:
                os.fchmod(self._fd, perms)  # exact mode, whatever the umask
            if seek_offset:
                os.lseek(self._fd, seek_offset, os.SEEK_SET)
        except OSError as exc:
            self.close()
            raise _os_error(exc, self.target) from exc

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
                self.written += n
        except OSError as exc:
            raise _os_error(exc, self.target) from exc

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
