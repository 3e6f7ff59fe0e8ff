"""The config folder as one content-addressed archive, sent to each worker once per run.

A job needs what lives beside its config: fixture files a ``copy`` action names, lifecycle
scripts, custom adapter code, scenario files, the tape. Which files a shell command reads
cannot be known, so the bundle is the whole config folder, less what is never a job's input
(``.axis``: other runs' reports; version control and package caches), bounded in files and
bytes. Its name is the sha256 of the archive, which is reproducible (sorted entries, no
times, no owners), so a worker that already holds a run's bundle keeps it.

Of ``.axis``, only the git caches the plan's jobs read go in (``caches``: the GitHub skills'
``.axis/skills-cache/<owner>/<repo>`` and the ``copy`` repositories' ``.axis/repos/…``,
fetched by ``axis run``'s pre-flight; :mod:`.caches`): each checkout's files, and of its
``.git`` only ``HEAD`` (what marks the folder a checkout where the job looks for it). A worker
never fetches them itself.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import shutil
import tarfile
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from axis_eval.errors import PreflightError

__all__ = ["EXCLUDED", "MAX_BYTES", "MAX_FILES", "Bundle", "build_bundle", "unpack"]

EXCLUDED = frozenset(
    {".axis", ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".mypy_cache",
     ".pytest_cache", ".ruff_cache"}
)  # fmt: skip
"""Folder names left out at any depth."""
MAX_FILES = 20_000
MAX_BYTES = 256 * 1024 * 1024
"""What a bundle may hold (uncompressed): past either, the run stops in pre-flight."""


@dataclass(frozen=True)
class Bundle:
    """An archive of the config folder."""

    digest: str
    """sha256 of :attr:`data`: the bundle's name on every worker."""
    data: bytes
    """A gzip-compressed tar archive."""
    files: int
    size: int
    """Bytes of the files in it, uncompressed."""


def _walk(root: Path) -> list[Path]:
    """Every file, link and folder under ``root`` that goes in (not ``root``)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED)
        base = Path(folder)
        out.extend(base / d for d in dirs if (base / d).is_symlink())
        out.extend(base / f for f in sorted(files))
        out.extend(base / d for d in dirs if not (base / d).is_symlink())
    return out


def _cache_entries(root: Path, caches: Iterable[str | Path]) -> set[Path]:
    """What the git caches ``caches`` (folders under ``root/.axis``, absolute or relative to
    ``root``) add: their parents, their files (less ``.git`` and the other excluded names),
    and each one's ``.git/HEAD``. A cache that is not a checkout adds nothing (the job that
    reads it says it was not fetched).

    Raises:
        PreflightError: a folder outside ``root/.axis`` (a ``.axis`` that links elsewhere).
    """
    axis = root / ".axis"
    out: set[Path] = set()
    for given in caches:
        folder = (root / given).resolve()
        if axis not in folder.parents:
            raise PreflightError(
                f"the git cache {folder} is not under {axis}: it cannot be sent to the Dask "
                "workers",
                hint="keep the config folder's .axis a plain folder",
            )
        head = folder / ".git" / "HEAD"
        if not head.is_file() or head.is_symlink():
            continue
        rel = folder.relative_to(root)
        out.update(root / parent for parent in list(rel.parents)[:-1])  # not "."
        out.update({folder, folder / ".git", head, *_walk(folder)})
    return out


def _too_big(root: Path, files: int, size: int, caches: set[Path]) -> PreflightError:
    """The error for a folder past a bound, naming the bound crossed and the top-level
    entries that hold the most of it (what to move out; the plan's git caches as one)."""
    by_files = files > MAX_FILES
    parts: list[tuple[int, int, str]] = []
    cached = [p.lstat().st_size for p in caches if p.is_file() and not p.is_symlink()]
    if cached:
        parts.append((len(cached), sum(cached), ".axis (the plan's git caches)"))
    for child in root.iterdir():
        if child.name in EXCLUDED:
            continue
        count, total = 1, child.lstat().st_size
        if child.is_dir() and not child.is_symlink():
            count = total = 0
            for folder, dirs, names in os.walk(child):
                dirs[:] = [d for d in dirs if d not in EXCLUDED]
                for name in names:
                    with contextlib.suppress(OSError):
                        total += (Path(folder) / name).lstat().st_size
                        count += 1
        parts.append((count, total, child.name))
    rank = (lambda p: (-p[0], -p[1], p[2])) if by_files else (lambda p: (-p[1], -p[0], p[2]))
    top = ", ".join(
        f"{name} ({count} file{'s' * (count != 1)}, {total / 2**20:.1f} MiB)"
        for count, total, name in sorted(parts, key=rank)[:3]
    )
    bound = f"{MAX_FILES} files" if by_files else f"{MAX_BYTES / 2**20:g} MiB"
    return PreflightError(
        f"the config folder {root} is too big to send to the Dask workers: it holds more "
        f"than {bound} (largest: {top})",
        hint="keep data the jobs do not read out of the config folder, or in a folder "
        f"named one of {', '.join(sorted(EXCLUDED))}",
    )


def build_bundle(config_dir: str | Path, caches: Iterable[str | Path] = ()) -> Bundle:
    """The bundle of ``config_dir``, with the git cache folders ``caches`` of its ``.axis``
    (:func:`_cache_entries`).

    Raises:
        PreflightError: the folder (with the caches) holds more than :data:`MAX_FILES`
            files or :data:`MAX_BYTES` bytes.
        ValueError: a cache folder outside ``config_dir/.axis``.
    """
    root = Path(config_dir).resolve()
    extra = _cache_entries(root, caches)
    entries = sorted({*_walk(root), *extra}, key=lambda p: p.relative_to(root).parts)
    buffer = io.BytesIO()
    files = size = 0
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path in entries:
            name = path.relative_to(root).as_posix()
            if path.is_symlink():
                target = path.readlink()
                inside = (path.parent / target).resolve()
                if target.is_absolute() or root not in (inside, *inside.parents):
                    continue  # a link out of the folder means nothing on another machine
            info = archive.gettarinfo(str(path), arcname=name)
            if info.islnk():
                # tarfile stores a second name of an inode as a hard link to the first: the
                # bundle holds every file whole (what a file says, not how it is stored).
                info.type, info.linkname = tarfile.REGTYPE, ""
                info.size = path.lstat().st_size
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                files += 1
                size += info.size
                if files > MAX_FILES or size > MAX_BYTES:
                    raise _too_big(root, files, size, extra)
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
            elif info.isdir() or info.issym():
                archive.addfile(info)
    data = buffer.getvalue()
    return Bundle(hashlib.sha256(data).hexdigest(), data, files, size)


def unpack(data: bytes, digest: str, into: Path) -> Path:
    """The bundle's folder under ``into`` (``into/<digest>``), unpacked on first use.

    Concurrent callers are safe: each unpacks into a folder of its own and renames it into
    place; the first rename wins.

    Raises:
        ValueError: ``data`` is not the bundle ``digest`` names.
    """
    target = into / digest
    if target.is_dir():
        with contextlib.suppress(OSError):
            os.utime(target)  # used now: the last to be pruned (see prune)
        return target
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"the bundle sent does not match its digest {digest[:12]}")
    into.mkdir(parents=True, exist_ok=True)
    scratch = into / f".{digest[:12]}-{uuid.uuid4().hex}"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            archive.extractall(scratch, filter="data")  # no absolute paths, no links out
        scratch.mkdir(exist_ok=True)  # an empty config folder
        try:
            scratch.rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


KEEP_BUNDLES = 5
"""Unpacked bundles a worker keeps beyond those its runs use (the most recently used)."""


def prune(into: Path, in_use: set[str], keep: int = KEEP_BUNDLES) -> list[str]:
    """Remove the unpacked bundles under ``into`` that no run here uses, but the ``keep``
    most recently used: a long-lived worker that serves many configs (or one config edited
    between runs) must not fill its disk. Returns the digests removed."""
    try:
        found = [p for p in into.iterdir() if p.is_dir() and not p.name.startswith(".")]
    except OSError:
        return []
    idle = [p for p in found if p.name not in in_use]

    def last_used(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    idle.sort(key=last_used, reverse=True)
    removed: list[str] = []
    for path in idle[keep:]:
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path.name)
    return removed
