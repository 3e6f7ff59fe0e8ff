"""Files between the host's job folders and the job's container, over the runner's
FileSystemService (the same calls that reach a runner in a pod).

- :meth:`Mirror.upload` (before the agent starts): what the adapter's ``prepare`` wrote on
  the host under the job's HOME and workspace, new or changed since the last upload, goes
  into the container at the same paths (files with their mode, symlinks as they are,
  empty folders).
- :meth:`Mirror.download` (after the agent): the host workspace is made to show what the
  container's holds, for artifacts and judges: every regular file is read back, bounded
  (:data:`MAX_FILES`, :data:`MAX_BYTES`); what is left out is said in :attr:`Mirror.notes`.
  Symlinks the agent made are never copied (a link would point into the host), and no
  write on the host goes through a host symlink or outside the workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from axis_eval._util.tree_removal import remove_tree
from axis_eval.execute.process import ProcessSpec, SpawnFailed
from axis_eval.execute.workspace import JobDirs

if TYPE_CHECKING:
    from axis_eval.execute.guest import GuestClient

__all__ = ["MAX_BYTES", "MAX_FILES", "PULL_LIMIT", "Mirror"]

log = logging.getLogger(__name__)

MAX_FILES = 20_000
"""At most this many of the workspace's files come back to the host after the agent."""
MAX_BYTES = 256 * 1024 * 1024
"""At most this many bytes of them (the first files listed, whole, up to this total)."""
LISTING_BYTES = 16 * 1024 * 1024
LISTING_ENTRIES = 200_000
"""The listing of the container's workspace is read up to this size and this many entries
(files, folders and links); past either the host copy is not pruned."""
PULL_LIMIT = 16 * 1024 * 1024
"""A pulled file (a phase's notes, capped again when read) is copied up to this size."""
PARALLEL = 8
"""File reads and writes in flight at once."""
_CHUNK = 256 * 1024
_SYSTEM_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}

_LINKS_AND_DIRS = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do mkdir -p -- "$1" || exit 1; shift; n=$((n-1)); '
    'done; while [ $# -gt 1 ]; do mkdir -p -- "$(dirname -- "$2")" && '
    'ln -sfn -- "$1" "$2" || exit 1; shift 2; done'
)
"""``sh -c`` script: ``<n> <dir>... (<target> <link>)...``: folders made, links set."""


@dataclass(frozen=True)
class _HostEntry:
    kind: str  # "f", "d" or "l"
    size: int
    mtime_ns: int
    mode: int
    target: str = ""


@dataclass(frozen=True)
class _GuestEntry:
    kind: str  # "f", "d" or "l"
    size: int
    mode: int
    rel: str


@dataclass
class _Budget:
    files: int
    size: int
    skipped_files: int = 0
    skipped_bytes: int = 0


def _scan(root: str) -> Iterator[tuple[str, _HostEntry]]:
    """Everything under ``root`` (not ``root`` itself), without following symlinks."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(entry.path)  # noqa: PTH115 -- strings throughout
                except OSError:
                    continue
                yield entry.path, _HostEntry("l", 0, st.st_mtime_ns, 0, target)
            elif stat.S_ISDIR(st.st_mode):
                yield entry.path, _HostEntry("d", 0, st.st_mtime_ns, stat.S_IMODE(st.st_mode))
                stack.append(entry.path)
            elif stat.S_ISREG(st.st_mode):
                mode = stat.S_IMODE(st.st_mode)
                yield entry.path, _HostEntry("f", st.st_size, st.st_mtime_ns, mode)


def _read_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


def _parse_listing(data: bytes) -> list[_GuestEntry]:
    """``find -printf '%y %s %m %P\\0'`` records (an incomplete last one is dropped)."""
    out: list[_GuestEntry] = []
    records = data.split(b"\0")
    for record in records[:-1]:
        head = record.split(b" ", 3)
        if len(head) != 4 or not head[3]:
            continue
        kind, size, mode = head[0].decode("ascii", "replace"), head[1], head[2]
        try:
            entry = _GuestEntry(kind, int(size), int(mode, 8), os.fsdecode(head[3]))
        except ValueError:
            continue
        if kind in ("f", "d", "l"):
            out.append(entry)
    return out


def _safe_parts(rel: str) -> list[str] | None:
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return parts


@dataclass
class Mirror:
    """The copies between one job's host folders and its container."""

    client: GuestClient
    dirs: JobDirs
    notes: list[str] = field(default_factory=list)
    """What :meth:`download` left out, said once each."""
    _sent: dict[str, _HostEntry] = field(default_factory=dict)

    # -- single files

    async def put(self, source: Path, destination: Path) -> None:
        """Copy a host file into the container (parents made, its mode kept)."""
        mode = stat.S_IMODE(source.stat().st_mode) or 0o644
        await self.client.write_file_chunks(str(destination), _read_chunks(str(source)), mode=mode)

    async def pull(self, path: Path) -> None:
        """The container's copy of ``path`` to the same host path (at most
        :data:`PULL_LIMIT` bytes); nothing when it has none."""
        data = bytearray()
        try:
            chunks = self.client.read_file_chunks(str(path))
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    data += chunk[: PULL_LIMIT - len(data)]
                    if len(data) >= PULL_LIMIT:
                        break
        except (FileNotFoundError, PermissionError, IsADirectoryError):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(data))

    # -- before the agent

    async def upload(self) -> None:
        """Send what is new or changed under the host's HOME and workspace.

        Raises:
            SpawnFailed: a file could not be written in the container.
        """
        found: dict[str, _HostEntry] = {}
        for root in (self.dirs.home_dir, self.dirs.work_dir):
            found.update(_scan(root))
        changed = {p: e for p, e in found.items() if self._sent.get(p) != e}
        if not changed:
            return
        files = [(p, e) for p, e in changed.items() if e.kind == "f"]
        links = [(p, e) for p, e in changed.items() if e.kind == "l"]
        holding = {os.path.dirname(p) for p, e in found.items() if e.kind != "d"}
        for folder in list(holding):
            while folder not in (self.dirs.home_dir, self.dirs.work_dir, "/", ""):
                folder = os.path.dirname(folder)
                holding.add(folder)
        empty = [p for p, e in changed.items() if e.kind == "d" and p not in holding]
        gate = asyncio.Semaphore(PARALLEL)

        async def send(path: str, entry: _HostEntry) -> None:
            async with gate:
                await self.client.write_file_chunks(
                    path, _read_chunks(path), mode=entry.mode or 0o644
                )

        try:
            await asyncio.gather(*(send(p, e) for p, e in files))
            if empty or links:
                pairs = [x for p, e in links for x in (e.target, p)]
                await self._run(
                    ["/bin/sh", "-c", _LINKS_AND_DIRS, "sh", str(len(empty)), *empty, *pairs]
                )
        except Exception as exc:  # OSError, SpawnFailed, a GuestError (the runner is gone)
            raise SpawnFailed(f"cannot copy the agent's files into its container: {exc}") from exc
        self._sent.update(changed)

    async def _run(self, argv: list[str]) -> None:
        proc = await self.client.spawn(ProcessSpec(argv, "/", dict(_SYSTEM_ENV), None))
        try:
            err = await proc.stderr.read(4096)
            code = await proc.wait()
        finally:
            await proc.stop(0)
        if code != 0:
            raise SpawnFailed(f"{argv[0]} exited {code}: {err.decode('utf-8', 'replace').strip()}")

    # -- after the agent

    async def _listing(self) -> tuple[list[_GuestEntry], bool]:
        """The container's workspace, and whether the listing is complete."""
        argv = ["find", "-P", self.dirs.work_dir, "-mindepth", "1"]
        argv += ["(", "-type", "f", "-o", "-type", "d", "-o", "-type", "l", ")"]
        argv += ["-printf", "%y %s %m %P\\0"]
        proc = await self.client.spawn(ProcessSpec(argv, "/", dict(_SYSTEM_ENV), None))
        data = bytearray()
        entries = 0
        complete = True
        try:
            while chunk := await proc.stdout.read(64 * 1024):
                data += chunk
                entries += chunk.count(b"\0")
                if len(data) > LISTING_BYTES or entries > LISTING_ENTRIES:
                    complete = False
                    break
            code = await proc.wait() if complete else None
        finally:
            await proc.stop(0)
        if code not in (0, None):
            complete = False  # an unreadable folder: what it holds is unknown
            self._note("some folders of the workspace could not be listed in the container")
        return _parse_listing(bytes(data)), complete

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            log.warning("docker sandbox: %s", text)

    async def download(self) -> None:
        """Make the host workspace show what the container's holds (bounded)."""
        entries, complete = await self._listing()
        work = self.dirs.work_dir
        budget = _Budget(MAX_FILES, MAX_BYTES)
        wanted: set[str] = set()
        jobs: list[tuple[str, _GuestEntry]] = []
        for entry in entries:
            parts = _safe_parts(entry.rel)
            if parts is None:
                continue
            host = os.path.join(work, *parts)
            if entry.kind == "l":
                wanted.add(host)  # a link the host has too stays; none is made
                continue
            if entry.kind == "d":
                if self._make_dir(host):
                    wanted.add(host)
                continue
            if budget.files <= 0 or entry.size > budget.size:
                budget.skipped_files += 1
                budget.skipped_bytes += entry.size
                continue
            budget.files -= 1
            budget.size -= entry.size
            wanted.add(host)
            jobs.append((host, entry))
        gate = asyncio.Semaphore(PARALLEL)

        async def fetch(host: str, entry: _GuestEntry) -> None:
            async with gate:
                await self._fetch(host, entry)

        await asyncio.gather(*(fetch(h, e) for h, e in jobs))
        if budget.skipped_files:
            self._note(
                f"the workspace holds more than the {MAX_FILES} files / {MAX_BYTES >> 20} MiB "
                f"copied back for artifacts and judges: {budget.skipped_files} files "
                f"({budget.skipped_bytes} bytes) were left in the container"
            )
        if not complete:
            self._note("the workspace listing was cut short: files may be missing on the host")
        else:
            self._prune(wanted)

    def _make_dir(self, host: str) -> bool:
        """``host`` as a real folder inside the workspace (no symlink on the way)."""
        if not self._parent_ok(host):
            return False
        try:
            st = os.lstat(host)
        except FileNotFoundError:
            try:
                os.mkdir(host, 0o755)  # noqa: PTH102
            except OSError:
                return False
            return True
        except OSError:
            return False
        if stat.S_ISDIR(st.st_mode):
            return True
        with contextlib.suppress(OSError):
            os.unlink(host)
            os.mkdir(host, 0o755)  # noqa: PTH102
            return True
        return False

    def _parent_ok(self, host: str) -> bool:
        """Whether every folder from the workspace down to ``host``'s parent is a real
        folder (never a symlink the adapter left): nothing is written outside."""
        work = self.dirs.work_dir
        folder = os.path.dirname(host)
        while folder != work:
            if not folder.startswith(work + "/"):
                return False
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return False
            except OSError:
                return False
            folder = os.path.dirname(folder)
        return True

    async def _fetch(self, host: str, entry: _GuestEntry) -> None:
        if not self._parent_ok(host):
            return
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(host)
            if stat.S_ISDIR(st.st_mode):
                remove_tree(host)
            elif not stat.S_ISREG(st.st_mode):
                os.unlink(host)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(host, flags, entry.mode & 0o777 or 0o644)
        except OSError:
            self._note(f"cannot write {entry.rel} in the host workspace")
            return
        written = 0
        try:
            chunks = self.client.read_file_chunks(os.path.join(self.dirs.work_dir, entry.rel))
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    piece = chunk[: entry.size - written]  # what was listed, not more
                    if piece:
                        os.write(fd, piece)
                        written += len(piece)
                    if written >= entry.size:
                        break
            os.fchmod(fd, entry.mode & 0o777)
        except (FileNotFoundError, IsADirectoryError):
            pass  # gone since the listing
        except PermissionError:
            self._note(f"{entry.rel} could not be read in the container")
        except Exception as exc:  # the runner went away: the job's end reports it
            self._note(f"copying the workspace back stopped: {exc}")
        finally:
            os.close(fd)
        st = os.lstat(host)
        self._sent[host] = _HostEntry("f", st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode))

    def _prune(self, wanted: set[str]) -> None:
        """Remove from the host workspace what the container's no longer holds."""
        for path, entry in sorted(_scan(self.dirs.work_dir), key=lambda x: x[0], reverse=True):
            if path in wanted:
                continue
            with contextlib.suppress(OSError):
                if entry.kind == "d":
                    remove_tree(path)
                else:
                    os.unlink(path)
            self._sent.pop(path, None)
