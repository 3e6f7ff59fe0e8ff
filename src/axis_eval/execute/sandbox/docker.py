"""``docker``: each job in a container of the agent image, ``ax-task-runner`` as PID 1,
driven over its guest services. (Built in the next step; until then it says so.)"""

from __future__ import annotations

from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.sandbox.base import JobSandbox, SandboxUnavailable
from axis_eval.execute.workspace import JobDirs

__all__ = ["DockerSandboxes"]


class DockerSandboxes:
    """The run's containers."""

    def __init__(self, run_token: str) -> None:
        self.run_token = run_token

    async def open(
        self, policy: SandboxPolicy, dirs: JobDirs, marker: str, config_dir: str
    ) -> JobSandbox:
        raise SandboxUnavailable("the docker sandbox is not available in this build yet")

    async def aclose(self) -> None:
        return None
