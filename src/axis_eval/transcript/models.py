"""The normalized transcript: one shape for every agent's conversation and tool calls."""

from typing import Any, Literal

from pydantic import Field

from axis_eval._types import OutputModel, TokenUsage
from axis_eval._util.defaults import empty_list

TRANSCRIPT_SCHEMA_VERSION = 1

EntryType = Literal["user", "assistant", "thinking", "tool", "system", "error"]


class ToolCall(OutputModel):
    """A tool call paired with its result."""

    id: str
    name: str
    """The tool's name as the agent called it (``Bash``, ``run_shell_command`` …)."""
    input: Any = None
    output: str | None = None
    """The result text; None while the call is open (or when the run ended first)."""
    is_error: bool = False
    kind: str | None = None
    """Agent-specific kind (an ACP tool kind, a Codex item type …)."""
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int | None = None
    input_bytes: int = 0
    """The input's size as the agent sent it: UTF-8 bytes of its compact JSON text (what
    ``JSON.stringify`` writes, as AXIS measures it; a string input as it is)."""
    output_bytes: int = 0
    """The result text's size in UTF-8 bytes (before any cut of what is kept)."""


class Entry(OutputModel):
    """One step of the conversation."""

    type: EntryType
    timestamp: str
    """ISO 8601, UTC."""
    offset_ms: int = 0
    """Milliseconds since the agent started."""
    text: str | None = None
    """Message, thinking or error text."""
    tool: ToolCall | None = None
    """For ``type == "tool"``: the call and its result."""


class Transcript(OutputModel):
    """A run's normalized transcript (``transcript.json``)."""

    schema_version: int = TRANSCRIPT_SCHEMA_VERSION
    agent: str
    """Adapter name."""
    agent_version: str | None = None
    """The agent CLI's exact version (e.g. ``2.1.197``), when known."""
    model: str | None = None
    session_id: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int = 0
    entries: list[Entry] = Field(default_factory=empty_list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_estimated: bool = False
    """True when the cost was computed from a price table, not reported by the agent."""
    cost_simulated: bool = False
    """True when the agent's model was the embedded scripted model server: its usage and
    cost are the tape's accounting, not money spent (docs/reports.md#cost)."""
    result: str | None = None
    """The final answer."""

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call, in order."""
        return [e.tool for e in self.entries if e.tool is not None]
