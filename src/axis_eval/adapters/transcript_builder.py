"""Build a :class:`Transcript` as an agent's events arrive: adapters talk only to this.

It lives with the adapters (not in ``transcript/``) because the adapters are its only
writers; ``transcript/`` holds the format and what is derived from a finished transcript.

It is also where a transcript's size is bounded (the run's ``limits.output``): at most
``max_entries`` entries and ``max_text_bytes`` of text (messages, reasoning, tool inputs
and outputs, streamed text not yet flushed), and no single text past
:data:`ENTRY_TEXT_BYTES`. Past a cap nothing more is kept and ``on_limit`` is told once (the
supervisor then stops the agent); the transcript up to the cap stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.clock import now_iso
from axis_eval._util.json_text import context_bytes, context_text
from axis_eval.adapters.supervision import utf8_size
from axis_eval.transcript.models import Entry, EntryType, ToolCall, Transcript

__all__ = ["ENTRY_TEXT_BYTES", "MAX_INPUT_DEPTH", "TranscriptBuilder", "fit_text", "size_text"]

ENTRY_TEXT_BYTES = 4 * 1024 * 1024
"""One text (a message, a tool's input or output, the result) is kept to its first 4 MiB:
what one entry costs to hold, write and render stays small whatever one line carried."""


MAX_INPUT_DEPTH = 100
"""A tool input nested deeper is kept as its JSON text: a transcript must stay writable and
readable (pydantic's JSON parser stops at about 200 levels, its serializer soon after)."""


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest in ``value`` more than ``limit`` deep (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def size_text(size: int) -> str:
    """``128 MiB``, ``2.5 KiB`` or ``900 bytes``: a byte count as a cap's message says it."""
    for unit, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if size >= unit:
            return f"{size / unit:.1f}".removesuffix(".0") + f" {name}"
    return f"{size:,} bytes"


def fit_text(text: str, room: int) -> str:
    """``text`` kept to about ``room`` bytes of UTF-8, saying how much was left out."""
    size = utf8_size(text)
    if size <= room:
        return text
    head = text[: max(room, 0)]
    while head and utf8_size(head) > room:  # non-ASCII: fewer characters than bytes
        head = head[: len(head) * 3 // 4]
    return head + f"\n[axis: {size - utf8_size(head):,} more bytes left out]"


class TranscriptBuilder:
    """Collects entries, pairs tool calls with results, and tracks usage as it arrives.

    ``max_entries`` and ``max_text_bytes`` (None: unbounded) cap what it keeps; the first
    cap reached is reported once to ``on_limit`` with the message the run fails with.
    """

    def __init__(
        self,
        agent: str,
        model: str | None = None,
        *,
        max_entries: int | None = None,
        max_text_bytes: int | None = None,
        on_limit: Callable[[str], None] | None = None,
    ) -> None:
        self._t0 = time.monotonic()
        self.transcript = Transcript(agent=agent, model=model, started_at=now_iso())
        self._open: dict[str, ToolCall] = {}
        self._open_started: dict[str, float] = {}
        self._pending_text: list[str] = []
        self._pending_bytes = 0
        self._pending_cut = 0
        self._counter = 0
        self.max_entries = max_entries
        self.max_text_bytes = max_text_bytes
        self.text_bytes = 0
        """Text held so far (what ``max_text_bytes`` caps)."""
        self.limit: str | None = None
        """The message of the cap reached (told to ``on_limit``)."""
        self.closed = False
        """A cap was reached here: nothing more is kept."""
        self.left_out = 0
        """Entries not kept after a cap was reached."""
        self._on_limit = on_limit
        self._spare: Entry | None = None
        """Past a cap, the newest entry not kept, as ``entries[-1]`` (a writer may look at
        the entry it just added); replaced by the next, and by a note at :meth:`finish`."""

    def _offset(self) -> int:
        return int((time.monotonic() - self._t0) * 1000)

    # -- the caps -----------------------------------------------------------------------

    def reach_limit(self, message: str, *, close: bool = True) -> None:
        """A cap was reached: tell ``on_limit`` (once) and, with ``close``, keep nothing more.

        Text streamed before it (deltas not yet flushed) was counted, so it is kept first.
        A reader that holds the text itself (free text, the answer built at the end) reports
        its cap with ``close=False``: the entry it makes of what it held is still kept.
        """
        if close and not self.closed:
            self.flush()
            self.closed = True
        if self.limit is None:
            self.limit = message
            if self._on_limit is not None:
                self._on_limit(message)

    def reach_text_limit(self, *, close: bool = True) -> None:
        """The text cap (``max_text_bytes``) was reached."""
        assert self.max_text_bytes is not None
        self.reach_limit(
            f"Output limit reached: the transcript holds {size_text(self.max_text_bytes)} "
            "of text (limits.output.transcript_bytes)",
            close=close,
        )

    def _room(self) -> int:
        """Bytes of text still to be held (one text at most :data:`ENTRY_TEXT_BYTES`)."""
        if self.max_text_bytes is None:
            return ENTRY_TEXT_BYTES
        return min(ENTRY_TEXT_BYTES, self.max_text_bytes - self.text_bytes)

    def _hold(self, text: str | None) -> str | None:
        """``text`` as it is kept, counted against the text cap: cut to one text's size, or
        to what is left under the cap (which then is reached)."""
        if text is None:
            return None
        room = self._room()
        if utf8_size(text) > room:
            text = fit_text(text, room)
            self.text_bytes += utf8_size(text)
            if room < ENTRY_TEXT_BYTES:
                self.reach_text_limit()
            return text
        self.text_bytes += utf8_size(text)
        return text

    def _hold_value(self, value: Any, size: int) -> Any:
        """A tool's input as kept: itself when it fits, else its JSON text, cut."""
        if value is None or isinstance(value, str):
            return self._hold(value)
        if size <= self._room() and not _deeper_than(value, MAX_INPUT_DEPTH):
            self.text_bytes += size
            return value
        return self._hold(context_text(value))

    def _admit(self) -> bool:
        """Whether one more entry is kept (reaching the events cap when it is not)."""
        cap = self.max_entries
        if not self.closed and cap is not None and len(self.transcript.entries) >= cap:
            self.reach_limit(
                f"Output limit reached: the transcript holds {cap:,} events (limits.output.events)"
            )
        return not self.closed

    def _add(self, kind: EntryType, text: str | None = None, tool: ToolCall | None = None) -> None:
        if not self._admit():
            self._leave_out(kind, tool)
            return
        self.transcript.entries.append(
            Entry(
                type=kind,
                timestamp=now_iso(),
                offset_ms=self._offset(),
                text=self._hold(text),
                tool=tool,
            )
        )

    def _leave_out(self, kind: EntryType, tool: ToolCall | None) -> None:
        """Past a cap: count the entry, and let it stand in the spare slot (no text)."""
        self.left_out += 1
        entries = self.transcript.entries
        if self._spare is not None and entries and entries[-1] is self._spare:
            entries.pop()
        self._spare = Entry(type=kind, timestamp=now_iso(), offset_ms=self._offset(), tool=tool)
        entries.append(self._spare)

    def keep_text(self, text: str | None) -> str | None:
        """A text kept outside the entries (the result): cut to :data:`ENTRY_TEXT_BYTES`."""
        return None if text is None else fit_text(text, ENTRY_TEXT_BYTES)

    def user(self, text: str) -> None:
        """The prompt (or a later user turn)."""
        self._add("user", text)

    def assistant(self, text: str) -> None:
        """A complete assistant message; it becomes the result unless one is set."""
        if text:
            self._add("assistant", text)

    def assistant_delta(self, text: str) -> None:
        """A streamed piece of an assistant message; flushed as one entry at the next event.

        The pieces held count against the text cap; past one text's size the rest of the
        message is only counted (an agent streaming one endless message holds 4 MiB)."""
        if self.closed or not text:
            return
        size = utf8_size(text)
        if self._pending_bytes + size > ENTRY_TEXT_BYTES:
            self._pending_cut += size
            return
        if self.max_text_bytes is not None and self.text_bytes + size > self.max_text_bytes:
            self.reach_text_limit()
            return
        self._pending_text.append(text)
        self._pending_bytes += size
        self.text_bytes += size

    def flush(self) -> None:
        """Turn buffered deltas into one assistant entry."""
        if self._pending_text:
            text = "".join(self._pending_text)
            if self._pending_cut:
                text += f"\n[axis: {self._pending_cut:,} more bytes left out]"
            self._pending_text.clear()
            self.text_bytes -= self._pending_bytes  # counted again as the entry's text
            self._pending_bytes = self._pending_cut = 0
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
        size = context_bytes(input)  # AXIS's measure: JSON.stringify's compact text
        if not self._admit():  # left out: the call stands in the spare slot, not opened
            call = ToolCall(id=id, name=name, kind=kind, started_at=now_iso(), input_bytes=size)
            self._leave_out("tool", call)
            return id
        call = ToolCall(
            id=id,
            name=name,
            input=self._hold_value(input, size),
            kind=kind,
            started_at=now_iso(),
            input_bytes=size,
        )
        self.transcript.entries.append(
            Entry(type="tool", timestamp=now_iso(), offset_ms=self._offset(), tool=call)
        )
        self._open[id] = call
        self._open_started[id] = time.monotonic()
        return id

    def tool_result(
        self,
        id: str | None,
        output: Any,
        *,
        is_error: bool = False,
        name: str | None = None,
    ) -> None:
        """Close a tool call; an unknown id pairs with the oldest open call, else opens one.

        Past a cap nothing is closed (a call left out must not pair with one kept)."""
        self.flush()
        if self.closed:
            return
        call = self._open.pop(id, None) if id is not None else None
        if call is None and self._open:
            first = next(iter(self._open))
            call = self._open.pop(first)
            id = first
        if call is None:
            id = self.tool_call(name or "unknown", None, id=id)
            if self.closed:  # that call was one too many
                return
            call = self._open.pop(id)
        text = output if isinstance(output, str) or output is None else context_text(output)
        started = self._open_started.pop(call.id, time.monotonic())
        call.output = self._hold(text)
        call.is_error = is_error
        call.ended_at = now_iso()
        call.duration_ms = int((time.monotonic() - started) * 1000)
        call.output_bytes = context_bytes(text)

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
        """The final answer (kept to its first :data:`ENTRY_TEXT_BYTES`)."""
        self.transcript.result = self.keep_text(text)

    def last_assistant_text(self) -> str | None:
        """The newest assistant message, or None."""
        self.flush()
        for entry in reversed(self.transcript.entries):
            if entry.type == "assistant" and entry.text:
                return entry.text
        return None

    def finish(self) -> Transcript:
        """Close the transcript: flush text, stamp the end, default the result; after a cap,
        a last ``system`` entry says what was left out."""
        self.flush()
        t = self.transcript
        if self._spare is not None and t.entries and t.entries[-1] is self._spare:
            t.entries.pop()
        self._spare = None
        if self.limit is not None:
            n = self.left_out
            left = f"; {n:,} more event{'s' if n != 1 else ''} left out" if n else ""
            t.entries.append(
                Entry(
                    type="system",
                    timestamp=now_iso(),
                    offset_ms=self._offset(),
                    text=f"axis: {self.limit}{left}",
                )
            )
        t.ended_at = now_iso()
        t.duration_ms = self._offset()
        if t.result is None:
            t.result = self.last_assistant_text()
        return t
