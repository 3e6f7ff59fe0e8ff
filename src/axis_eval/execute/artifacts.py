"""Collect artifact files from a workspace after the agent finishes, within a size cap."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from axis_eval.execute.models import CollectedArtifact
from axis_eval.planning.select import glob_regex

MAX_RUN_BYTES = 50 * 1024 * 1024
"""Artifacts copied per run; files past the cap are listed, not copied."""
MAX_FILES = 1000


def _mime(path: str) -> str:
    import mimetypes  # only a run that collects artifacts needs it

    kind, _ = mimetypes.guess_type(path)
    return kind or "application/octet-stream"


def collect_artifacts(
    workspace: Path, patterns: Sequence[str], *, cap_bytes: int = MAX_RUN_BYTES
) -> list[CollectedArtifact]:
    """Files under ``workspace`` matching any glob, sorted by path; symlinks skipped."""
    if not patterns:
        return []
    regexes = [glob_regex(p) for p in patterns]
    matched: list[str] = []
    top = os.fspath(workspace).rstrip("/")
    # An explicit stack: os.walk recurses once per level, and an agent's workspace can be
    # thousands of folders deep (RecursionError made the job an internal failure).
    stack = [top]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = list(listing)
        except OSError:  # gone, unreadable, or a path too long to open
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    continue  # a symlink, a socket, a device
            except OSError:
                continue
            rel = entry.path[len(top) + 1 :]
            if any(rx.match(rel) for rx in regexes):
                matched.append(rel)
    used = 0
    out: list[CollectedArtifact] = []
    for rel in sorted(matched)[:MAX_FILES]:
        full = workspace / rel
        size = full.stat().st_size
        if used + size > cap_bytes:
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
            CollectedArtifact(
                path=rel, size_bytes=size, mime_type=_mime(rel), data=full.read_bytes()
            )
        )
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
