"""Collect artifact files from a workspace after the agent finishes, within a size cap.

The workspace is the agent's: anything in it may have become a symlink, a FIFO or a tree
thousands of folders deep, and another job handed a descriptor of it may still be changing
it. So every folder and file is opened from its parent's descriptor with ``O_NOFOLLOW``
(the workspace itself included): a link anywhere on the way is never followed, and a host
file cannot be read into the report through one. Only regular files are read, never past
the cap, and no recursion walks the tree.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from axis_eval._util.beneath import DIR_FLAGS, open_regular, read_at_most
from axis_eval.execute.models import CollectedArtifact
from axis_eval.planning.select import glob_regex

MAX_RUN_BYTES = 50 * 1024 * 1024
"""Artifacts copied per run; files past the cap are listed, not copied."""
MAX_FILES = 1000
MAX_DEPTH = 128
"""Folders below the workspace looked into for artifacts (each open while below it)."""


def _mime(path: str) -> str:
    import mimetypes  # only a run that collects artifacts needs it

    kind, _ = mimetypes.guess_type(path)
    return kind or "application/octet-stream"


def collect_artifacts(
    workspace: Path, patterns: Sequence[str], *, cap_bytes: int = MAX_RUN_BYTES
) -> list[CollectedArtifact]:
    """Regular files under ``workspace`` matching any glob, sorted by path; links skipped."""
    if not patterns:
        return []
    regexes = [glob_regex(p) for p in patterns]
    try:
        top = os.open(workspace, DIR_FLAGS)
    except OSError:  # gone, or made a link by the agent: nothing there is its to collect
        return []
    try:
        matched = [rel for rel in _files(top) if any(rx.match(rel) for rx in regexes)]
        out: list[CollectedArtifact] = []
        used = 0
        for rel in sorted(matched)[:MAX_FILES]:
            found = _read(top, rel, cap_bytes - used)
            if found is None:
                continue  # no longer a regular file there
            size, data = found
            if data is None:
                out.append(
                    CollectedArtifact(
                        path=rel,
                        size_bytes=size,
                        mime_type=_mime(rel),
                        note=f"not copied: the run's artifacts exceed {cap_bytes} bytes",
                    )
                )
                continue
            used += size
            out.append(
                CollectedArtifact(path=rel, size_bytes=size, mime_type=_mime(rel), data=data)
            )
    finally:
        os.close(top)
    if len(matched) > MAX_FILES:
        out.append(
            CollectedArtifact(
                path="…",
                size_bytes=0,
                mime_type="text/plain",
                note=f"{len(matched) - MAX_FILES} more files matched; only {MAX_FILES} kept",
            )
        )
    return out


def _listing(fd: int) -> list[tuple[str, bool]]:
    """``(name, is a folder)`` of the regular files and folders in ``fd`` (links, FIFOs,
    sockets and devices left out)."""
    found: list[tuple[str, bool]] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    found.append((entry.name, True))
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.name, False))
            except OSError:
                continue
    return found


def _files(top: int) -> list[str]:
    """The regular files under ``top``, as ``/``-joined paths relative to it."""
    files: list[str] = []
    try:
        stack: list[tuple[int, list[tuple[str, bool]], str]] = [(top, _listing(top), "")]
    except OSError:
        return files
    try:
        while stack:
            fd, entries, prefix = stack[-1]
            if not entries:
                stack.pop()
                if fd != top:
                    os.close(fd)
                continue
            name, is_dir = entries.pop()
            if not is_dir:
                files.append(prefix + name)
                continue
            if len(stack) > MAX_DEPTH:
                continue
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue
            try:
                listing = _listing(child)
            except OSError:
                os.close(child)
                continue
            stack.append((child, listing, f"{prefix}{name}/"))
    finally:
        for fd, _, _ in stack:
            if fd != top:
                os.close(fd)
    return files


def _read(top: int, rel: str, room: int) -> tuple[int, bytes | None] | None:
    """The size of the regular file ``rel`` under ``top`` and its bytes (None when more
    than ``room``); None when it is not a regular file reached without a link."""
    try:
        handle = open_regular(top, rel.split("/"))
    except OSError:
        return None
    try:
        size = os.fstat(handle).st_size
        data = None if size > room else read_at_most(handle, room)  # None: grew past it
    except OSError:
        return None
    finally:
        os.close(handle)
    return (size, None) if data is None else (len(data), data)
