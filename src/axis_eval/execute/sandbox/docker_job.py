"""One job's container, as its :class:`~.base.JobSandbox` (the run's containers are
:mod:`.docker`'s): processes through the runner's ProcessService, files through its
FileSystemService (:mod:`.docker_sync`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from axis_eval.adapters.install import agents_dir
from axis_eval.config.sandbox import SandboxKind
from axis_eval.execute.process import ManagedProcess, ProcessSpec, Spawner, SpawnFailed
from axis_eval.execute.sandbox.base import SandboxUnavailable
from axis_eval.execute.sandbox.containers import AGENTS_IN_IMAGE
from axis_eval.execute.sandbox.docker_sync import Mirror
from axis_eval.execute.workspace import JobDirs

if TYPE_CHECKING:
    from pathlib import Path

    from axis_eval.execute.guest import GuestClient

__all__ = ["Container", "ContainerKey", "DockerSandbox", "safe_name"]


class Discards(Protocol):
    """Who removes a job's container when the job is done (the run's containers)."""

    async def discard(self, container: Container) -> None: ...


SYSTEM_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}

PREPARE = """\
set -e
mkdir -p "$1" && chmod 700 "$1"
mkdir -p "$2" "$3" "$4"
if [ -n "$5" ] && [ -d "$6" ] && [ ! -e "$5" ] && [ ! -L "$5" ]; then
  mkdir -p "$(dirname "$5")" && ln -s "$6" "$5" || true
fi
"""
"""``sh -c``: the job's folders (root, workspace, HOME, TMPDIR), and the host's agent-CLI
folder linked to the image's (when the image has one and the path is free)."""


@dataclass(frozen=True)
class ContainerKey:
    """What makes two jobs' containers interchangeable (a spare is started per key)."""

    image: str
    network: str
    memory_mb: int | None
    pids: int | None
    cpus: float | None
    config_dir: str
    readable: tuple[str, ...]
    writable: tuple[str, ...]


@dataclass
class Container:
    """A started container whose runner answers."""

    id: str
    name: str
    folder: str
    """Private host folder: the socket's hard link; ``shared/`` is mounted in the container."""
    client: GuestClient
    image: str


class DockerSandbox:
    """One job's container (a :class:`~.base.JobSandbox`)."""

    def __init__(self, owner: Discards, container: Container, dirs: JobDirs) -> None:
        self._owner = owner
        self._container = container
        self._dirs = dirs
        self._client = container.client
        self._mirror = Mirror(container.client, dirs)
        self._procs: list[ManagedProcess] = []
        self._closed = False

    @property
    def kind(self) -> SandboxKind:
        return "docker"

    @property
    def container_id(self) -> str:
        return self._container.id

    @property
    def notes(self) -> list[str]:
        """What the copy of the workspace back to the host left out (also logged)."""
        return list(self._mirror.notes)

    @property
    def spawn(self) -> Spawner:
        return self._spawn

    async def prepare(self) -> None:
        """Make the job's folders in the container (and link the agent CLIs)."""
        d = self._dirs
        agents = str(agents_dir())
        argv = ["/bin/sh", "-c", PREPARE, "sh", d.root_dir, d.work_dir, d.home_dir, d.tmp_dir]
        argv += [agents, AGENTS_IN_IMAGE]
        proc = await self._client.spawn(ProcessSpec(argv, "/", dict(SYSTEM_ENV), None))
        try:
            err = await proc.stderr.read(4096)
            code = await proc.wait()
        finally:
            await proc.stop(0)
        if code != 0:
            text = err.decode("utf-8", "replace").strip() or f"exit code {code}"
            raise SandboxUnavailable(f"cannot make the job's folders in its container: {text}")

    async def _spawn(self, process: ProcessSpec) -> ManagedProcess:
        if self._closed:
            raise RuntimeError("the job's sandbox is closed")
        try:
            proc: ManagedProcess = await self._client.spawn(process)
        except SpawnFailed as exc:
            program = process.argv[0]
            if exc.exit_code == 127 and program.startswith(str(agents_dir()) + "/"):
                raise SpawnFailed(
                    f"{exc} (the image {self._container.image} does not hold this agent CLI "
                    "at its pinned version: rebuild it with `make build-agent-image`)",
                    127,
                ) from exc
            raise
        self._forget_finished()
        self._procs.append(proc)
        return proc

    def _forget_finished(self) -> None:
        """Close the connections of processes that exited and whose output was read to the
        end (each guest process streams on a connection of its own; a job may run many
        commands): a shell command's caller never stops a process it saw exit."""
        kept: list[ManagedProcess] = []
        for proc in self._procs:
            if proc.exited and proc.stdout.at_eof() and proc.stderr.at_eof():
                proc.close_pipes()
            else:
                kept.append(proc)
        self._procs = kept

    async def put_file(self, source: Path, destination: Path) -> None:
        await self._mirror.put(source, destination)

    async def pull(self, path: Path) -> None:
        await self._mirror.pull(path)

    async def before_agent(self) -> None:
        await self._mirror.upload()

    async def after_agent(self) -> list[str]:
        await self._mirror.download()
        return self.notes

    async def release(self, marker: str) -> None:
        return None  # what a check left running ends with the container

    async def close(self) -> None:
        """End the job's processes and remove its container; idempotent."""
        if self._closed:
            return
        self._closed = True
        for proc in self._procs:
            proc.close_pipes()  # the container's removal kills them all at once
        self._procs.clear()
        await self._owner.discard(self._container)


def safe_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text)
