"""Build a :class:`Transcript` as an agent's events arrive: adapters talk only to this.

It lives with the adapters (not in ``transcript/``) because the adapters are its only
writers; ``transcript/`` holds the format and what is derived from a finished transcript.
"""

from __future__ import annotations

import json
import time
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.clock import now_iso
from axis_eval.transcript.models import Entry, EntryType, ToolCall, Transcript


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):
        return len(str(value).encode("utf-8"))


class TranscriptBuilder:
    """Collects entries, pairs tool calls with results, and tracks usage as it arrives."""

    def __init__(self, agent: str, model: str | None = None) -> None:
        self._t0 = time.monotonic()
        self.transcript = Transcript(agent=agent, model=model, started_at=now_iso())
        self._open: dict[str, ToolCall] = {}
        self._open_started: dict[str, float] = {}
        self._pending_text: list[str] = []
        self._counter = 0

    def _offset(self) -> int:
        return int((time.monotonic() - self._t0) * 1000)

    def _add(self, kind: EntryType, text: str | None = None, tool: ToolCall | None = None) -> None:
        self.transcript.entries.append(
            Entry(type=kind, timestamp=now_iso(), offset_ms=self._offset(), text=text, tool=tool)
        )

    def user(self, text: str) -> None:
        """The prompt (or a later user turn)."""
        self._add("user", text)

    def assistant(self, text: str) -> None:
        """A complete assistant message; it becomes the result unless one is set."""
        if text:
            self._add("assistant", text)

    def assistant_delta(self, text: str) -> None:
        """A streamed piece of an assistant message; flushed as one entry at the next event."""
        self._pending_text.append(text)

    def flush(self) -> None:
        """Turn buffered deltas into one assistant entry."""
        if self._pending_text:
            text = "".join(self._pending_text)
            self._pending_text.clear()
            self.assistant(text)

    def thinking(self, text: str) -> None:
        """Reasoning text."""
        self.flush()
        if text:
            self._add("thinking", text)

    def system(self, text: str) -> None:
        """An event from the agent or harness that is not part of the conversation."""
        self.flush()
        self._add("system", text)

    def error(self, message: str) -> None:
        """An error the agent reported."""
        self.flush()
        self._add("error", message)

    def tool_call(
        self, name: str, input: Any = None, *, id: str | None = None, kind: str | None = None
    ) -> str:
        """Open a tool call; returns its id (generated when the agent gave none)."""
        self.flush()
        if id is None:
            self._counter += 1
            id = f"call_{self._counter}"
        call = ToolCall(
            id=id,
            name=name,
            input=input,
            kind=kind,
            started_at=now_iso(),
            input_bytes=_size(input),
        )
        self._open[id] = call
        self._open_started[id] = time.monotonic()
        self._add("tool", tool=call)
        return id

    def tool_result(
        self,
        id: str | None,
        output: Any,
        *,
        is_error: bool = False,
        name: str | None = None,
    ) -> None:
        """Close a tool call; an unknown id pairs with the oldest open call, else opens one."""
        self.flush()
        call = self._open.pop(id, None) if id is not None else None
        if call is None and self._open:
            first = next(iter(self._open))
            call = self._open.pop(first)
            id = first
        if call is None:
            id = self.tool_call(name or "unknown", None, id=id)
            call = self._open.pop(id)
        text = output if isinstance(output, str) or output is None else json.dumps(output)
        started = self._open_started.pop(call.id, time.monotonic())
        call.output = text
        call.is_error = is_error
        call.ended_at = now_iso()
        call.duration_ms = int((time.monotonic() - started) * 1000)
        call.output_bytes = _size(text)

    def add_usage(self, usage: TokenUsage) -> None:
        """Add usage reported incrementally (per turn)."""
        self.transcript.usage = self.transcript.usage + usage

    def set_usage(self, usage: TokenUsage) -> None:
        """Replace usage with a cumulative total reported by the agent."""
        self.transcript.usage = usage

    def set_cost(self, cost_usd: float | None, *, estimated: bool = False) -> None:
        """The run's cost in US dollars."""
        self.transcript.cost_usd = cost_usd
        self.transcript.cost_estimated = estimated

    def set_result(self, text: str | None) -> None:
        """The final answer."""
        self.transcript.result = text

    def last_assistant_text(self) -> str | None:
        """The newest assistant message, or None."""
        self.flush()
        for entry in reversed(self.transcript.entries):
            if entry.type == "assistant" and entry.text:
                return entry.text
        return None

    def finish(self) -> Transcript:
        """Close the transcript: flush text, stamp the end, default the result."""
        self.flush()
        t = self.transcript
        t.ended_at = now_iso()
        t.duration_ms = self._offset()
        if t.result is None:
            t.result = self.last_assistant_text()
        return t
