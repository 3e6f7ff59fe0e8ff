"""``none``: the job's processes run on the host, each in its own process group.

Nothing is hidden: the agent runs as the harness's user and sees what that user sees
(``docs/sandboxes.md`` lists what leaks). What it starts carries the job's marker, so the
job's end finds and stops it (:func:`~axis_eval.execute.process.kill_marked`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from axis_eval.config.sandbox import SandboxKind
from axis_eval.execute.process import Spawner, forget_marker, kill_marked, spawn

__all__ = ["HostSandbox"]


def copy_file(source: Path, destination: Path) -> None:
    """A host copy with its metadata, parents created."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, destination)


class HostSandbox:
    """A job run straight on the host (``sandbox: none``)."""

    def __init__(self, marker: str, spawner: Spawner = spawn) -> None:
        self._marker = marker
        self._spawn = spawner
        self._closed = False

    @property
    def kind(self) -> SandboxKind:
        return "none"

    @property
    def spawn(self) -> Spawner:
        return self._spawn

    async def put_file(self, source: Path, destination: Path) -> None:
        copy_file(source, destination)

    async def pull(self, path: Path) -> None:
        return None  # the host's copy is the job's

    async def before_agent(self) -> None:
        return None  # the agent runs where the adapter wrote

    async def after_agent(self) -> list[str]:
        return []

    async def release(self, marker: str) -> None:
        await kill_marked(marker, 0.5)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await kill_marked(self._marker, 0.5)
        finally:
            forget_marker(self._marker)
