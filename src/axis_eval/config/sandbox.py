"""``sandbox``: how a job's processes are confined, and what they may reach.

``settings.sandbox`` (and a scenario's ``sandbox``) is a mode or an object::

    sandbox: bwrap                          # auto (default) | none | bwrap | docker
    sandbox: {mode: docker, image: my/agents:1}

``network`` (``host`` by default, ``none`` for offline tasks) is set on a scenario or an
agent; ``limits.memory_mb``, ``limits.pids`` and ``limits.cpus`` bound a job's container.
What one job gets, resolved from all of these, travels in its
:class:`~axis_eval.planning.models.JobSpec` as a :class:`SandboxPolicy`; ``auto`` is turned
into a real mode where the job runs (a probe of that machine), so a remote worker confines
its jobs as a local run does. See ``docs/sandboxes.md``.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from axis_eval._util.defaults import empty_list
from axis_eval.config._base import Bounds, InputModel, NonEmptyStr

__all__ = [
    "Cpus",
    "MemoryMb",
    "NetworkMode",
    "Pids",
    "SandboxConfig",
    "SandboxKind",
    "SandboxMode",
    "SandboxPolicy",
]

SandboxMode = Literal["auto", "none", "bwrap", "docker"]
"""What a config asks for; ``auto`` is ``bwrap`` where a probe shows it works, else ``none``."""
SandboxKind = Literal["none", "bwrap", "docker"]
"""What actually confined a run (recorded per run in the report)."""
NetworkMode = Literal["host", "none"]
"""``host``: the host's network (agents reach their model API); ``none``: loopback only."""

DEFAULT_AGENT_IMAGE = "axis-eval/ax-agents:dev"
"""The docker sandbox's image when none is set: ``make build-agent-image`` builds it."""

MemoryMb = Annotated[int, Field(strict=True), Bounds(gt=0, le=2**30)]
Pids = Annotated[int, Field(strict=True), Bounds(gt=0, le=2**22)]
Cpus = Annotated[float, Field(strict=True), Bounds(gt=0, le=4096)]


class SandboxConfig(InputModel):
    """``settings.sandbox`` or a scenario's ``sandbox``: a mode, or ``{mode, image}``."""

    mode: SandboxMode | None = None
    image: NonEmptyStr | None = None
    """The docker sandbox's image (default ``axis-eval/ax-agents:dev``)."""
    readable: list[NonEmptyStr] | None = None
    """Host folders a confined job may also read (absolute, ``~/…`` or relative to the
    config folder): a toolchain kept in a hidden HOME, a dataset."""
    writable: list[NonEmptyStr] | None = None
    """Host folders a confined job may also write: a shared package cache. Everything
    the agent writes there outlives the job: give it only what you would give the agent."""

    @model_validator(mode="before")
    @classmethod
    def _bare_mode(cls, data: Any) -> Any:
        return {"mode": data} if isinstance(data, str) else data


class SandboxPolicy(InputModel):
    """How one job is confined: the mode, its network, its image and resource limits."""

    mode: SandboxMode = "auto"
    network: NetworkMode = "host"
    image: str | None = None
    """The container image (``docker``); default: the project's agent image."""
    readable: list[str] = Field(default_factory=empty_list)
    """Absolute host folders the job may also read (resolved from the config)."""
    writable: list[str] = Field(default_factory=empty_list)
    """Absolute host folders the job may also write."""
    memory_mb: MemoryMb | None = None
    """Memory limit of the job's container, in MiB (``docker``)."""
    pids: Pids | None = None
    """Process limit of the job's container (``docker``)."""
    cpus: Cpus | None = None
    """CPU limit of the job's container, in cores (``docker``)."""
