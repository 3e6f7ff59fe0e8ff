"""RunnerConfig: everything one run needs, its defaults, and its environment variables.

In a task container the runner is started with no arguments, so every option can also
be set through a variable (``spec.env`` puts them there); flags win over variables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ax_task_runner.options import (
    ENV_OPTIONS as ENV_OPTIONS,
    _seconds as _seconds,
    options_from_env as options_from_env,
    parse_go_duration as parse_go_duration,
)
from ax_task_runner.server import H2cHandler
from ax_task_runner.spec import Task, Workspace

__all__ = [
    "DEFAULT_BOOTSTRAP_TIMEOUT_S",
    "ENV_OPTIONS",
    "GuestEnv",
    "Readiness",
    "RunnerConfig",
    "options_from_env",
    "parse_go_duration",
]

Readiness = Literal["workspace", "serving"]
GuestEnv = Literal["runner", "empty"]
DEFAULT_BOOTSTRAP_TIMEOUT_S = 600.0

Hook = Callable[[Any], Any]
"""``hook(runner)``; may return an awaitable, which is awaited."""


class RunnerConfig(BaseModel):
    """One run of the task runner (what :func:`ax_task_runner.run_async` takes)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    task: Task | None = None
    """The Task; None runs with no command and one implicit workspace at the root."""
    workspaces: list[Workspace] = Field(default_factory=list)
    """The bound Workspaces; matched to ``spec.workspaces`` by name."""
    host: str | None = None
    """Address to listen on; None or empty means every interface."""
    port: int = Field(default=80, ge=0, le=65535)
    """HTTP (and h2c) port; 0 picks a free one."""
    unix_socket: str | None = None
    """Listen on this Unix socket instead of TCP (``host`` and ``port`` are then unused):
    the guest services reachable only through the socket file, e.g. from a folder mounted
    into a container that has no network."""
    workspace_root: str = "/workspace"
    """The durable volume: bindings without a path land at ``<root>/<name>``."""
    state_dir: str = "/ax"
    """Markers, git logs and goal output (upstream's ``/ax``)."""
    readiness: Readiness = "workspace"
    """``workspace``: plain /readyz is 503 until every workspace is prepared (the
    document). ``serving``: plain /readyz is 200 once serving; only
    ``/readyz?check=workspace`` waits (later upstream)."""
    stop_grace_s: float = Field(default=10.0, ge=0)
    """Seconds between SIGTERM and SIGKILL for the command's process group."""
    goal_agent: str = "gemini"
    """Agent that runs a binding's goal: an axis-eval built-in, module:attr or file.py."""
    goal_model: str | None = None
    """Model passed to the goal agent (its own default when unset)."""
    goal_endpoint: str | None = None
    """Model API base URL for the goal agent (``AX_MODEL_BASE_URL``)."""
    bootstrap_timeout_s: float = Field(default=DEFAULT_BOOTSTRAP_TIMEOUT_S, gt=0)
    """Time limit of one goal bootstrap."""
    git_attempts: int = Field(default=5, ge=1)
    """Tries of the git sequence per repository."""
    git_retry_delay_s: float = Field(default=2.0, ge=0)
    """Pause between two tries."""
    export_env: bool = True
    """Also set ``AX_METADATA_URL`` and ``spec.env`` in this process's environment."""
    reap_orphans: bool = True
    """Reap adopted orphans (and become a child subreaper when not PID 1). Turn off when
    embedding in a program that manages other child processes itself."""
    files_roots: list[str] = Field(default_factory=list)
    """Folders the guest FileSystemService may read and write (symlinks resolved); empty:
    the first workspace only. Relative paths still resolve against the first workspace."""
    confine_files: bool = True
    """False lifts the confinement of the guest FileSystemService (any path, as process
    execution already allows)."""
    guest_env: GuestEnv = "runner"
    """Base environment of guest processes: ``runner`` (the runner's own, with
    ``AX_METADATA_URL`` and ``spec.env``; the request's ``env`` is added on top) or
    ``empty`` (exactly the request's ``env``: what a harness that builds the whole
    environment needs)."""
    h2c_handler: H2cHandler | None = None
    """Takes connections that open with the HTTP/2 preface; None looks for the guest
    services module, else such connections are closed."""
    before_serve: Hook | None = None
    """Called before the HTTP server starts listening."""
    after_serve: Hook | None = None
    """Called once it listens (``runner.port`` is known)."""
    on_ready: Hook | None = None
    """Called once every workspace is prepared."""
    on_command_exit: Hook | None = None
    """Called with a :class:`~ax_task_runner.supervisor.CommandExit` when the command ends
    (or could not start)."""
