"""The sandbox seam: how one job's processes are confined.

A job opens one :class:`JobSandbox` and starts every process of the job through it: setup
and teardown commands, the agent, the rubric's ``run`` checks. So they all see the same
workspace, under the same rules. Adapters never touch it: they describe an argv, an
environment and files; the supervisor starts that argv with :attr:`JobSandbox.spawn`.

The kinds (``docs/sandboxes.md``):

- ``none`` (:mod:`.host`): host processes in their own group, found by their job marker.
- ``bwrap`` (:mod:`.bwrap`): each command in its own bubblewrap namespaces (PID, IPC, UTS,
  mounts): the host read-only, the job's folders writable, the rest hidden. Stopping the
  command ends its PID namespace, so nothing it started survives and no ``/proc`` scan is
  needed.
- ``docker`` (:mod:`.docker`): the job's container, ``ax-task-runner`` as PID 1, driven over
  its guest services (:mod:`axis_eval.execute.guest`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from axis_eval.config.sandbox import SandboxKind
from axis_eval.execute.process import Spawner

__all__ = ["JobSandbox", "SandboxUnavailable"]


class SandboxUnavailable(Exception):
    """The sandbox a job asked for cannot run here (no bwrap, no daemon, no image...).

    The job then fails as an infrastructure failure (error kind ``infrastructure``), kept
    apart from agent failures; the run goes on.
    """


class JobSandbox(Protocol):
    """One job's confinement. Open per job, closed when the job ends (whatever happened)."""

    @property
    def kind(self) -> SandboxKind:
        """What confines the job (recorded per run in the report)."""
        ...

    @property
    def spawn(self) -> Spawner:
        """Starts a process of the job inside the sandbox (the agent, a shell command)."""
        ...

    async def put_file(self, source: Path, destination: Path) -> None:
        """Copy the host file ``source`` to ``destination`` in the job's filesystem
        (a setup ``copy`` action); parents are created."""
        ...

    async def pull(self, path: Path) -> None:
        """Bring the job's copy of the file at ``path`` to the same path on the host (a
        phase's notes file); a missing file is not an error."""
        ...

    async def before_agent(self) -> None:
        """The agent is about to start: what the adapter wrote on the host (its HOME
        files, workspace files) must be where the agent runs."""
        ...

    async def after_agent(self) -> list[str]:
        """The agent has ended: the host copy of the workspace must show what it left, for
        artifacts and judges (the checks have already run inside). Returns warnings for
        the run (what could not be brought back)."""
        ...

    async def release(self, marker: str) -> None:
        """End whatever commands started with ``marker`` left running (the checks' own
        marker), leaving the rest of the job alone."""
        ...

    async def close(self) -> None:
        """End every process of the job and remove what the sandbox made; idempotent."""
        ...
