"""Lifecycle actions (setup, teardown, beforeAll, afterAll) and MCP server entries."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, Tag

from axis_eval._util.defaults import empty_list
from axis_eval.config._base import InputModel, NonEmptyStr, by_field

DEFAULT_ACTION_TIMEOUT_MINUTES = 3.0
"""AXIS's per-action time limit for ``run_script`` (180 s)."""


class RunScriptAction(InputModel):
    """Run a shell command in the workspace (config directory for beforeAll/afterAll)."""

    action: Literal["run_script"]
    command: NonEmptyStr
    """The command, run through ``/bin/sh -c``."""
    timeout_minutes: float | None = Field(default=None, gt=0)
    """Time limit for this command; default 3 minutes, as AXIS."""


class CopyAction(InputModel):
    """Copy files matching a glob (relative to the config directory) into the workspace."""

    action: Literal["copy"]
    match: NonEmptyStr
    """A path or glob resolved against the config directory."""
    destination: str = "."
    """Where matches land, relative to the workspace (created when missing)."""


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

    time_minutes: float | None = Field(default=None, gt=0)
    """Wall-clock limit in minutes (fractions allowed)."""
    tokens: int | None = Field(default=None, gt=0)
    """Token limit (input + output + cache reads)."""
