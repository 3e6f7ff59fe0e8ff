"""Lifecycle actions (setup, teardown, beforeAll, afterAll) and MCP server entries."""

from typing import Annotated, Literal

from pydantic import Field, Tag, field_validator

from axis_eval._util.defaults import empty_list
from axis_eval.config._base import (
    InputModel,
    Minutes,
    NonEmptyStr,
    Tokens,
    by_field,
)
from axis_eval.config._text import check_keys, env_name_problem
from axis_eval.config.git_sources import parse_copy_match
from axis_eval.config.output_limit import OutputLimit
from axis_eval.config.sandbox import Cpus, MemoryMb, Pids

DEFAULT_ACTION_TIMEOUT_MINUTES = 3.0
"""AXIS's per-action time limit for ``run_script`` (180 s)."""


class RunScriptAction(InputModel):
    """Run a shell command in the workspace (config directory for beforeAll/afterAll)."""

    action: Literal["run_script"]
    command: NonEmptyStr
    """The command, run through ``/bin/sh -c``."""
    timeout_minutes: Minutes | None = None
    """Time limit for this command; default 3 minutes, as AXIS; at most 7 days."""


class CopyAction(InputModel):
    """Copy files matching a glob (relative to the config directory), or from a git
    repository, into the workspace."""

    action: Literal["copy"]
    match: NonEmptyStr
    """A path or glob resolved against the config directory, or a git repository
    ``URL#REF:PATH`` (``#REF`` and ``:PATH`` optional; fetched before any job starts into
    ``.axis/repos``; docs/config.md)."""
    destination: str = "."
    """Where matches land, relative to the workspace (created when missing)."""

    @field_validator("match", mode="after")
    @classmethod
    def _git_match(cls, value: str) -> str:
        parse_copy_match(value)  # a git URL that cannot be used fails here, not in a job
        return value


ACTION_NAMES = ("run_script", "copy")


LifecycleAction = Annotated[
    Annotated[RunScriptAction, Tag("<run_script>")] | Annotated[CopyAction, Tag("<copy>")],
    by_field("axis_action", "an action of run_script or copy", "action", ACTION_NAMES),
]


class McpStdioServer(InputModel):
    """An MCP server the agent starts as a child process."""

    type: Literal["stdio"]
    command: NonEmptyStr
    args: list[str] = Field(default_factory=empty_list)
    env: dict[str, str] = Field(default_factory=dict)
    """Environment for the server; values are treated as secrets in everything written."""

    @field_validator("env", mode="after")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        check_keys(value, env_name_problem)
        return value


class McpHttpServer(InputModel):
    """An MCP server reached over HTTP."""

    type: Literal["http"]
    url: NonEmptyStr
    headers: dict[str, str] = Field(default_factory=dict)
    """Request headers; values are redacted in everything written."""


MCP_TYPES = ("stdio", "http")


McpServer = Annotated[
    Annotated[McpStdioServer, Tag("<stdio>")] | Annotated[McpHttpServer, Tag("<http>")],
    by_field("axis_mcp_type", "a type of stdio or http", "type", MCP_TYPES),
]


class Limit(InputModel):
    """A time and token budget."""

    time_minutes: Minutes | None = None
    """Wall-clock limit in minutes (fractions allowed), at most 7 days."""
    tokens: Tokens | None = None
    """Token limit (input + output + cache reads), at most a trillion."""
    output: OutputLimit | None = None
    """How much the agent may print and the transcript keep (``config/output_limit.py``)."""
    memory_mb: MemoryMb | None = None
    """Memory of the job's container, in MiB (``sandbox: docker``)."""
    pids: Pids | None = None
    """Processes the job's container may hold (``sandbox: docker``)."""
    cpus: Cpus | None = None
    """CPU cores the job's container may use (``sandbox: docker``)."""
