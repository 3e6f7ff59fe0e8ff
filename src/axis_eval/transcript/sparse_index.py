"""The sparse index: a run's tool interactions, one short line each.

Judges reference interactions by their ids here (``#3``), the signals are computed per
interaction, and the report's waterfall draws them. Built deterministically from a
:class:`~axis_eval.transcript.models.Transcript`:

- every tool call is one interaction, in transcript order (ids 1..n);
- every ``error`` entry the agent reported is one too (category agent, error flag);
- messages, thinking and system notes are not interactions (the goal judge reads them in
  the full transcript).

Text form (``sparse-index.txt``)::

    # Sparse Index: <scenario key> / <agent>
    # <n> interactions | env: a | svc: b | agent: c | errors: d
    # wall clock 12.4s | tool time 3.1s | context 18.2KB | startup 1.2s
    <blank>
    #1   env       Bash            ls -la | @1.2s 40ms | in 18B out 1.2KB | ok
    #2   env,svc   Bash            curl -s https://x.io/a | @2.0s 1.3s | in 44B out 312B | error
"""

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import Field

from axis_eval._types import CATEGORIES, Category, OutputModel
from axis_eval._util.defaults import empty_list
from axis_eval._util.json_text import context_bytes, context_text
from axis_eval.transcript.categories import categorize, is_title, normalize_tool_name
from axis_eval.transcript.models import Entry, ToolCall, Transcript

DETAIL_CHARS = 100
"""A line's detail (from the tool input) is cut to this many characters."""

TOOL_CHARS = 24
"""A tool name longer than this is cut in the line."""

CATEGORY_LABELS: dict[Category, str] = {"environment": "env", "service": "svc", "agent": "agent"}

_DETAIL_KEYS = (
    "command",
    "cmd",
    "file_path",
    "absolute_path",
    "filePath",
    "path",
    "notebook_path",
    "pattern",
    "query",
    "url",
    "skill",
    "subagent_type",
    "description",
    "prompt",
    "changes",
    "patch",
    "title",
)
"""Input keys whose value best says what a call did, in order of preference."""


class Interaction(OutputModel):
    """One interaction: a tool call (or an error the agent reported)."""

    id: int = Field(ge=1)
    """Stable 1-based id, in transcript order; judges cite it as ``#id``."""
    categories: list[Category]
    """Environment, service and/or agent (a networked shell command is both env and svc)."""
    tool: str
    """The tool's name as the agent called it (``error`` for a reported error)."""
    canonical_tool: str
    """The normalized name the categories were chosen by (``run_shell_command`` → ``shell``)."""
    kind: str | None = None
    """The agent's kind for the call (ACP kind, Codex item type), when given."""
    detail: str = ""
    """What the call did, from its input, at most 100 characters."""
    start_ms: int = 0
    """Offset from the agent's start."""
    duration_ms: int | None = None
    """How long the call took; None when unknown (then speed counts as excellent)."""
    input_bytes: int = 0
    """The input's size: UTF-8 bytes of its compact JSON text (``JSON.stringify``, as AXIS
    measures it; a string input as it is)."""
    output_bytes: int = 0
    """The result text's size in UTF-8 bytes."""
    is_error: bool = False
    """The call failed (the agent or tool said so) or the entry is an error."""
    entry_index: int = 0
    """Index of the transcript entry this interaction comes from."""
    tool_call_id: str | None = None

    @property
    def context_bytes(self) -> int:
        """Input + output size, at least 1: the weight of this interaction's judged signals."""
        return max(1, self.input_bytes + self.output_bytes)

    def line(self) -> str:
        """The interaction's line in the sparse index."""
        cats = ",".join(CATEGORY_LABELS[c] for c in self.categories)
        tool = _cut(self.tool if not is_title(self.tool) else self.canonical_tool, TOOL_CHARS)
        timing = f"@{format_ms(self.start_ms)} " + (
            "?" if self.duration_ms is None else format_ms(self.duration_ms)
        )
        sizes = f"in {format_bytes(self.input_bytes)} out {format_bytes(self.output_bytes)}"
        outcome = "error" if self.is_error else "ok"
        head = f"{'#' + str(self.id):<5}{cats:<10}{tool:<16}{self.detail}".rstrip()
        return f"{head} | {timing} | {sizes} | {outcome}"


class SparseIndexStats(OutputModel):
    """Run statistics over the interactions (multi-category ones count in each category)."""

    interactions: int = 0
    environment: int = 0
    service: int = 0
    agent: int = 0
    errors: int = 0
    tool_time_ms: int = 0
    """Sum of the known durations."""
    wall_clock_ms: int = 0
    """End of the last interaction, from the agent's start."""
    context_bytes: int = 0
    """Sum of input and output sizes."""
    startup_ms: int | None = None
    """Agent start to its first event, when positive."""
    shutdown_ms: int | None = None
    """Last event to the agent's end, when positive."""


class SparseIndex(OutputModel):
    """A run's interactions and statistics; ``render()`` gives ``sparse-index.txt``."""

    scenario_key: str | None = None
    agent: str
    """The agent's display name (the adapter's name when nothing else is known)."""
    interactions: list[Interaction] = Field(default_factory=empty_list)
    stats: SparseIndexStats = Field(default_factory=SparseIndexStats)

    def by_id(self, interaction_id: int) -> Interaction | None:
        """The interaction with this id, or None."""
        if 1 <= interaction_id <= len(self.interactions):
            hit = self.interactions[interaction_id - 1]
            if hit.id == interaction_id:
                return hit
        return next((i for i in self.interactions if i.id == interaction_id), None)

    def in_category(self, category: Category) -> list[Interaction]:
        """The interactions tagged with a category, in order."""
        return [i for i in self.interactions if category in i.categories]

    def header(self) -> list[str]:
        """The header lines (no blank line)."""
        s = self.stats
        lines = [
            f"# Sparse Index: {self.scenario_key or '-'} / {self.agent}",
            f"# {s.interactions} interactions | env: {s.environment} | svc: {s.service}"
            f" | agent: {s.agent} | errors: {s.errors}",
        ]
        timing = [
            f"wall clock {format_ms(s.wall_clock_ms)}",
            f"tool time {format_ms(s.tool_time_ms)}",
            f"context {format_bytes(s.context_bytes)}",
        ]
        if s.startup_ms is not None:
            timing.append(f"startup {format_ms(s.startup_ms)}")
        if s.shutdown_ms is not None:
            timing.append(f"shutdown {format_ms(s.shutdown_ms)}")
        lines.append("# " + " | ".join(timing))
        return lines

    def lines(self, ids: Iterable[int] | None = None) -> list[str]:
        """One line per interaction (only ``ids`` when given)."""
        wanted = None if ids is None else set(ids)
        return [i.line() for i in self.interactions if wanted is None or i.id in wanted]

    def render(self) -> str:
        """The text of ``sparse-index.txt``: header, blank line, one line per interaction."""
        return "\n".join([*self.header(), "", *self.lines()]) + "\n"


def build_sparse_index(
    transcript: Transcript, *, scenario_key: str | None = None, agent_name: str | None = None
) -> SparseIndex:
    """The sparse index of a transcript (pure: same transcript, same index)."""
    interactions: list[Interaction] = []
    for index, entry in enumerate(transcript.entries):
        if entry.tool is not None:
            interactions.append(_tool_interaction(len(interactions) + 1, index, entry, entry.tool))
        elif entry.type == "error":
            text = entry.text or "error"
            interactions.append(
                Interaction(
                    id=len(interactions) + 1,
                    categories=["agent"],
                    tool="error",
                    canonical_tool="error",
                    detail=_cut(_one_line(text), DETAIL_CHARS),
                    start_ms=entry.offset_ms,
                    output_bytes=context_bytes(text),
                    is_error=True,
                    entry_index=index,
                )
            )
    return SparseIndex(
        scenario_key=scenario_key,
        agent=agent_name or transcript.agent,
        interactions=interactions,
        stats=_stats(transcript, interactions),
    )


def _tool_interaction(number: int, index: int, entry: Entry, call: ToolCall) -> Interaction:
    detail = describe_input(call.input)
    if not detail and is_title(call.name):
        detail = _cut(_one_line(call.name), DETAIL_CHARS)
    input_bytes = call.input_bytes or context_bytes(call.input)
    output_bytes = call.output_bytes or context_bytes(call.output)
    return Interaction(
        id=number,
        categories=categorize(call.name, call.input, call.kind),
        tool=call.name or "unknown",
        canonical_tool=normalize_tool_name(call.name, call.kind) or "unknown",
        kind=call.kind,
        detail=detail,
        start_ms=entry.offset_ms,
        duration_ms=_duration(call),
        input_bytes=input_bytes,
        output_bytes=output_bytes,
        is_error=call.is_error,
        entry_index=index,
        tool_call_id=call.id,
    )


def _stats(transcript: Transcript, interactions: list[Interaction]) -> SparseIndexStats:
    counts = {c: sum(c in i.categories for i in interactions) for c in CATEGORIES}
    ends = [i.start_ms + (i.duration_ms or 0) for i in interactions]
    entries = transcript.entries
    startup = entries[0].offset_ms if entries and entries[0].offset_ms > 0 else None
    shutdown = None
    if entries and transcript.duration_ms:
        last = max(entries[-1].offset_ms, max(ends, default=0))
        gap = transcript.duration_ms - last
        shutdown = gap if gap > 0 else None
    return SparseIndexStats(
        interactions=len(interactions),
        environment=counts["environment"],
        service=counts["service"],
        agent=counts["agent"],
        errors=sum(i.is_error for i in interactions),
        tool_time_ms=sum(i.duration_ms or 0 for i in interactions),
        wall_clock_ms=max(ends, default=0),
        context_bytes=sum(i.input_bytes + i.output_bytes for i in interactions),
        startup_ms=startup,
        shutdown_ms=shutdown,
    )


def describe_input(tool_input: Any) -> str:
    """What a call did, from its input: the command, path, query … at most 100 characters."""
    if tool_input is None:
        return ""
    if isinstance(tool_input, str):
        return _cut(_one_line(tool_input), DETAIL_CHARS)
    if isinstance(tool_input, dict):
        for key in _DETAIL_KEYS:
            value = tool_input.get(key)
            text = _value_text(value)
            if text:
                return _cut(_one_line(text), DETAIL_CHARS)
        parts = [
            f"{k}: {_value_text(v)}"
            if isinstance(v, str | int | float | bool)
            else f"{k}: {len(v)} item{'s' if len(v) != 1 else ''}"
            for k, v in tool_input.items()
            if (isinstance(v, str | int | float | bool) and _value_text(v))
            or (isinstance(v, list | dict) and v)
        ]
        return _cut(_one_line(", ".join(parts)), DETAIL_CHARS)
    return _cut(_one_line(context_text(tool_input)), DETAIL_CHARS)


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return " ".join(value)  # an argv (Codex ``cmd``)
        changes = [
            f"{c.get('kind', 'change')}: {c.get('path', '?')}"
            for c in value
            if isinstance(c, dict) and ("path" in c or "kind" in c)
        ]
        if changes:
            return "; ".join(changes)  # Codex ``file_change``
    if isinstance(value, dict) and value:
        changes = [
            f"{v.get('type', 'change') if isinstance(v, dict) else 'change'}: {k}"
            for k, v in value.items()
        ]
        return "; ".join(changes)
    return ""


_SPACES = re.compile(r"\s+")


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _duration(call: ToolCall) -> int | None:
    if call.duration_ms is not None:
        return max(0, call.duration_ms)
    if call.started_at and call.ended_at:
        try:
            start = datetime.fromisoformat(call.started_at.replace("Z", "+00:00"))
            end = datetime.fromisoformat(call.ended_at.replace("Z", "+00:00"))
        except ValueError:
            return None
        delta = int((end - start).total_seconds() * 1000)
        return delta if delta >= 0 else None
    return None


def format_ms(ms: int) -> str:
    """``840ms``, ``1.2s``, ``2m05s``."""
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    return f"{ms // 60_000}m{(ms % 60_000) // 1000:02d}s"


def format_bytes(size: int) -> str:
    """``312B``, ``1.3KB``, ``2.0MB``."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"
