"""What the server logs: one record per request, one per trapped outside connection."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConnectAttempt", "RequestRecord", "ToolCallRecord", "Usage", "UsageTotals"]


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Record):
    """Token counts, derived the same way on every protocol."""

    input_tokens: int = 0
    """ceil(len(canonical JSON of the conversation, system text and tools) / 4)."""
    output_tokens: int = 0
    """ceil(len(answer text + JSON of each tool call's arguments) / 4)."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class ToolCallRecord(_Record):
    """A tool call the server sent."""

    name: str
    """The tool name sent to the agent (the offered tool an abstract call mapped to)."""
    tool: str
    """The tool as the tape names it (``shell``, ``write_file``, ``Bash``, ``echo`` ...)."""
    kind: str
    """``function``, ``custom`` (freeform input) or ``local_shell``."""
    args: dict[str, Any]
    """The arguments sent."""
    offered: bool
    """False when the request offered no fitting tool."""
    via: str | None = None
    """How the call reached the tool: ``shell`` or ``apply_patch`` when a file tool was
    carried out through another tool, ``exec`` when it went through Codex's code tool
    (``name`` is then ``exec`` and ``args.input`` the JavaScript), ``deferred`` for a tool
    of a namespace the agent had not sent yet."""
    namespace: str | None = None
    """The Responses namespace sent with ``name`` (``mcp__fake`` for Codex's MCP tools)."""


class RequestRecord(_Record):
    """One HTTP request the server answered."""

    timestamp: float
    """Seconds since the epoch when the request arrived."""
    method: str
    path: str
    """The request path, query string included."""
    status: int
    """The HTTP status answered."""
    protocol: str | None = None
    """``anthropic``, ``openai-responses``, ``openai-chat``, ``gemini``, ``models``, or None
    for an unknown path."""
    model: str | None = None
    stream: bool = False
    conversation: str | None = None
    """The tape conversation that answered (also for side requests when one matched)."""
    turn: int | None = None
    """The turn index: tool-calling assistant turns in the request's history."""
    side: bool = False
    """A side request (title, router JSON, quota probe, count_tokens, no tools offered)."""
    side_reason: str | None = None
    unmatched: bool = False
    """No conversation matched the prompt and the tape has no default."""
    past_end: bool = False
    """The turn index was past the conversation's last turn."""
    usage: Usage = Field(default_factory=Usage)
    """The usage reported to the client (zero for token counting)."""
    text: str | None = None
    """The answer's text."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    """A few request headers: ``user-agent`` and ``originator`` when sent."""
    error: str | None = None
    """Why the request failed (bad JSON, unknown path ...)."""


class ConnectAttempt(_Record):
    """An attempt to reach an outside host through the server used as a proxy."""

    timestamp: float
    method: str
    """``CONNECT`` (HTTPS) or the method of an absolute-URL (plain HTTP proxy) request."""
    target: str
    """``host:port`` for CONNECT, the full URL otherwise."""
    host: str
    port: int | None = None
    headers: dict[str, str] = Field(default_factory=dict)


class UsageTotals(_Record):
    """Usage summed over the request log."""

    main: Usage
    """Conversation turns only (side requests left out)."""
    all: Usage
    """Every request, side requests included."""
    requests: int
    """Model requests counted in ``all``."""
    side_requests: int
