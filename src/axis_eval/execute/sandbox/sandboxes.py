"""The run's sandboxes: one :class:`~.base.JobSandbox` per job, of the kind its policy asks.

``auto`` becomes ``bwrap`` when a probe shows bubblewrap works on this machine (once per
process: a remote worker probes its own), else ``none``; ``axis run`` says so, with the
probe's reason, before any job starts (``pipeline.checks.sandbox_preflight``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from axis_eval.config.sandbox import SandboxKind, SandboxMode, SandboxPolicy
from axis_eval.execute.process import Spawner, spawn
from axis_eval.execute.sandbox.base import JobSandbox
from axis_eval.execute.sandbox.host import HostSandbox

if TYPE_CHECKING:
    from axis_eval.execute.workspace import JobDirs

__all__ = ["Sandboxes"]


@dataclass
class Sandboxes:
    """Opens each job's sandbox; :meth:`aclose` removes what the run's sandboxes left."""

    run_token: str
    hidden: Sequence[str] = ()
    """Host folders no confined job may see (the project's ``.axis``: other runs' reports)."""
    readable: Sequence[str] = ()
    """Host folders a confined job must read even inside a hidden folder, beyond those it
    always may (the config folder, the agent CLIs, ``PATH``, Python's prefix)."""
    spawner: Spawner = spawn
    """What starts a ``none`` job's processes (tests pass their own)."""
    parent_home: str | None = None
    """The run's HOME (``RunOptions.environ``), hidden from confined jobs along with this
    process's own."""
    _docker: Any = field(default=None, init=False, repr=False)
    _bwrap: Any = field(default=None, init=False, repr=False)
    """The run's :class:`~.bwrap_mounts.BwrapMounts` and bwrap binary, made at the first
    bwrap job: every job after it reuses the resolved folders."""

    def resolve(self, mode: SandboxMode) -> SandboxKind:
        """The kind a job asking for ``mode`` gets here."""
        if mode != "auto":
            return mode
        from axis_eval.execute.sandbox.probe import bwrap_problem

        return "none" if bwrap_problem() else "bwrap"

    async def open(
        self, policy: SandboxPolicy, dirs: JobDirs, marker: str, config_dir: str
    ) -> JobSandbox:
        """The sandbox of one job.

        Raises:
            SandboxUnavailable: its kind cannot run here (the job is an infrastructure
                failure; nothing was started).
        """
        kind = self.resolve(policy.mode)
        if kind == "none":
            return HostSandbox(marker, self.spawner)
        if kind == "bwrap":
            from axis_eval.execute.sandbox.bwrap import BwrapSandbox
            from axis_eval.execute.sandbox.bwrap_mounts import BwrapMounts
            from axis_eval.execute.sandbox.probe import bwrap_path

            if self._bwrap is None:
                mounts = BwrapMounts(hidden=self.hidden, readable=self.readable)
                self._bwrap = (mounts, bwrap_path() or "bwrap")
            mounts, binary = self._bwrap
            return BwrapSandbox(
                dirs,
                policy,
                config_dir=config_dir,
                parent_home=self.parent_home,
                mounts=mounts,
                binary=binary,
            )
        if self._docker is None:
            from axis_eval.execute.sandbox.docker import DockerSandboxes

            self._docker = DockerSandboxes(self.run_token, hidden=self.hidden)
        job: JobSandbox = await self._docker.open(policy, dirs, marker, config_dir)
        return job

    async def aclose(self) -> None:
        """Remove whatever the run's containers left (every exit path calls it)."""
        if self._docker is not None:
            await self._docker.aclose()
