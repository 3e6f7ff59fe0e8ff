"""Read an agent that prints NDJSON (:class:`LinesMode`) or free text (:class:`AggregateMode`).

:class:`StreamReader` is the :class:`~axis_eval.adapters.supervision.OutputReader` of every
adapter built with :func:`~axis_eval.adapters.base.create_agent_adapter`: it splits stdout
into lines or decodes it in chunks, hands each to the adapter's callbacks, and asks
``get_result`` for the answer at the end. A callback that raises never ends the run: the
exception becomes a warning and a transcript error.

What it holds is bounded whatever the agent prints: a line is read up to
:data:`~axis_eval.adapters.supervision.MAX_LINE_BYTES` (the rest of a longer one is skipped,
never buffered), the raw output is a :class:`~axis_eval.adapters.supervision.RawOutput`
(head and tail), and free text (stdout is the answer) reaches the adapter as its first and
last :data:`TEXT_PART_BYTES` with a note of what was left out between them, the rest only
counted against the transcript's text cap (``limits.output.transcript_bytes``). The bytes
the agent may print at all are the supervisor's to count.
"""

from __future__ import annotations

import asyncio
import codecs
import json
from collections import deque
from collections.abc import Callable
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.clock import now_iso
from axis_eval.adapters import base
from axis_eval.adapters.supervision import (
    MAX_LINE_BYTES,
    NOT_JSON,
    RawOutput,
    Reading,
    RunNotes,
    describe,
    utf8_size,
)
from axis_eval.adapters.transcript_builder import ENTRY_TEXT_BYTES, TranscriptBuilder, size_text

__all__ = ["StreamReader"]

_READ_BYTES = 256 * 1024
"""What one read takes: as much as the event loop reads from a pipe at a time, so the
reader keeps up with a flooding agent instead of letting its buffer fill."""
_LONG_LINE_KEPT = 64 * 1024
"""What the raw output keeps of a line longer than :data:`MAX_LINE_BYTES`."""
TEXT_PART_BYTES = ENTRY_TEXT_BYTES // 2 - 4096
"""Free text reaches the adapter as its first and its last this many bytes: together (and
the note between them) one entry's text, all the transcript keeps of an answer anyway."""
_JSON_STARTS = frozenset('{["-0123456789tfn')
"""The first characters a JSON text can have: a line starting otherwise is not parsed."""


class StreamReader:
    """Feeds one agent's stdout to its adapter's stream callbacks."""

    converses = False

    def __init__(
        self,
        adapter: base.AgentAdapter[Any],
        inp: base.AdapterInput,
        builder: TranscriptBuilder,
        notes: RunNotes,
    ) -> None:
        self.adapter = adapter
        self.inp = inp
        self.builder = builder
        self.notes = notes
        self.ctx: base.StreamContext[Any] = base.StreamContext(adapter.initial_state(), builder)
        aggregate = isinstance(adapter.stream, base.AggregateMode)
        self.raw_output: list[str] = RawOutput(chunks=aggregate)
        """stdout: one item per non-blank line (lines mode) or per decoded chunk (aggregate),
        head and tail."""
        self.lines = 0
        self.text_seen = 0
        """Bytes of free text read (aggregate mode), what the text cap counts."""
        self.text_fed = 0
        """… of which handed to the adapter as they came (the head)."""
        self._text_tail: deque[tuple[str, int]] = deque()
        self._tail_bytes = 0
        self._left_out = 0
        self.text_full = False
        """The free text reached the text cap: the rest is not taken."""

    def stdin_data(self) -> bytes | None:
        if self.adapter.prompt_via != "stdin":
            return None
        try:
            return self.inp.prompt.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return self.inp.prompt.encode("utf-8", "replace")

    def spawn_env(self) -> dict[str, str]:
        return {}

    # -- while it runs ----------------------------------------------------------------

    def call(self, what: str, fn: Callable[..., object], *args: object) -> None:
        """Run an adapter callback; an exception becomes a warning and a transcript error."""
        try:
            fn(*args)
        except Exception as exc:
            message = f"{self.adapter.name}: {what} raised {describe(exc)}"
            if self.notes.warn(f"{what} errors", message):
                self.builder.error(message)

    def on_line(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        self.lines += 1
        self.raw_output.append(text)
        if self.builder.closed:
            return  # past a cap: nothing more is kept, so nothing more is read
        value = _parse(text)
        if value is _NOT_JSON:
            self.notes.warn(
                NOT_JSON, f"stdout line {self.lines} is not JSON, kept as raw text: {text[:200]}"
            )
            return
        stream = self.adapter.stream
        assert isinstance(stream, base.LinesMode)
        self.call("on_line", stream.on_line, value, self.ctx)
        self.notes.output_grew()

    def on_long_line(self, head: bytes, size: int) -> None:
        """A line longer than :data:`MAX_LINE_BYTES`: its start goes to the raw output, the
        line itself to no callback (it was never read whole)."""
        self.lines += 1
        text = head[:_LONG_LINE_KEPT].decode("utf-8", "replace")
        self.raw_output.append(f"{text}[axis: {size - len(text):,} more bytes left out]")
        self.notes.warn(
            NOT_JSON,
            f"stdout line {self.lines} is {size:,} bytes, longer than a line may be "
            f"({size_text(MAX_LINE_BYTES)}); left out: {text[:200]}",
        )

    def on_chunk(self, text: str) -> None:
        """A piece of free text: handed on while in the head, else kept in the tail ring."""
        self.raw_output.append(text)
        if self.text_full or self.builder.closed:
            return
        size = utf8_size(text)
        cap = self.builder.max_text_bytes
        if cap is not None and self.text_seen + size > cap:
            # The answer made of what came before is still kept (the cap does not close).
            self.text_full = True
            self.builder.reach_text_limit(close=False)
            return
        self.text_seen += size
        self.ctx.feed_text(text)
        if self.text_fed + size <= TEXT_PART_BYTES and not self._text_tail:
            self.text_fed += size
            self.feed(text)
            return
        self._text_tail.append((text, size))
        self._tail_bytes += size
        while self._tail_bytes > TEXT_PART_BYTES and len(self._text_tail) > 1:
            self._tail_bytes -= self._text_tail.popleft()[1]
            self._left_out += 1
        self.notes.output_grew()

    def feed(self, text: str) -> None:
        stream = self.adapter.stream
        assert isinstance(stream, base.AggregateMode)
        self.call("on_chunk", stream.on_chunk, text, self.ctx)
        self.notes.output_grew()

    def feed_tail(self) -> None:
        """At the end of free text: the tail ring, after a note of what was left out."""
        if self._left_out:
            left = self.text_seen - self.text_fed - self._tail_bytes
            self.feed(f"\n[axis: {left:,} bytes of output left out here]\n")
        self._left_out = 0
        while self._text_tail:
            self.feed(self._text_tail.popleft()[0])
        self._tail_bytes = 0

    def live_tokens(self) -> int:
        return max(self.ctx.estimated_tokens, self.builder.transcript.usage.total)

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        if isinstance(self.adapter.stream, base.AggregateMode):
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while chunk := await stdout.read(_READ_BYTES):
                if text := decoder.decode(chunk):
                    self.on_chunk(text)
                await asyncio.sleep(0)
            if text := decoder.decode(b"", final=True):
                self.on_chunk(text)
            self.feed_tail()
            return
        # Split by hand: StreamReader.readline() fails on a line over its buffer limit.
        # ``pending`` never grows past MAX_LINE_BYTES: of a longer line only its size is
        # counted on (``over``) until its newline.
        pending = bytearray()
        over = 0
        while chunk := await stdout.read(_READ_BYTES):
            parts = chunk.split(b"\n")
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                if over:
                    over += len(part)
                elif len(pending) + len(part) > MAX_LINE_BYTES:
                    room = MAX_LINE_BYTES - len(pending)
                    pending += part[:room]
                    over = len(pending) + len(part) - room
                elif last:
                    pending += part
                    break
                elif pending:
                    pending += part
                    self.on_line(bytes(pending))
                    pending.clear()
                    continue
                else:
                    self.on_line(part)
                    continue
                if not last:  # the long line ended here
                    self.on_long_line(bytes(pending), over)
                    pending.clear()
                    over = 0
            await asyncio.sleep(0)
        if over:
            self.on_long_line(bytes(pending), over)
        elif pending:
            self.on_line(bytes(pending))

    # -- after it ended ---------------------------------------------------------------

    async def close(self) -> None:
        """Nothing to release: the supervisor owns the pipes."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Run ``on_end`` and ``get_result``; the transcript is finished on return."""
        self.feed_tail()  # (a read cut short never got to it)
        if self.adapter.stream.on_end is not None:
            self.call("on_end", self.adapter.stream.on_end, self.ctx)
        ended_at = now_iso()
        builder = self.builder
        res: base.AdapterResult | None = None
        problem: str | None = None
        try:
            got = self.adapter.get_result(
                base.ResultContext(
                    self.ctx.state,
                    builder,
                    exit_code,
                    stderr,
                    builder.transcript.started_at or ended_at,
                    ended_at,
                )
            )
            if not isinstance(got, base.AdapterResult):
                raise TypeError(f"get_result must return an AdapterResult, got {got!r:.100}")
            _check_result(got)
            res = got
        except Exception as exc:
            problem = f"{self.adapter.name}: get_result raised {describe(exc)}"
            self.notes.warn("get_result", problem)
            builder.error(problem)
        if res is not None:
            if res.usage is not None:
                builder.set_usage(res.usage)
            if res.cost_usd is not None:
                builder.set_cost(res.cost_usd)
            if res.session_id is not None:
                builder.transcript.session_id = res.session_id
        result = builder.keep_text(res.result) if res is not None else None
        transcript = builder.finish()
        transcript.result = result
        transcript.ended_at = ended_at
        error = res.error if res is not None else problem
        return Reading(error, warnings=self.ctx.kept_warnings())


_NOT_JSON = object()


def _parse(text: str) -> Any:
    """The JSON value of one line, or ``_NOT_JSON`` (nested past the parser's depth too).

    A line that cannot start a JSON text is not parsed: a flood of plain text costs no
    parser exception per line."""
    if text.lstrip()[:1] not in _JSON_STARTS:
        return _NOT_JSON
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _check_result(res: base.AdapterResult) -> None:
    """Raise TypeError when an adapter's result has fields of the wrong type."""
    checks: list[tuple[str, object, type | tuple[type, ...]]] = [
        ("result", res.result, str),
        ("error", res.error, str),
        ("usage", res.usage, TokenUsage),
        ("cost_usd", res.cost_usd, (int, float)),
        ("session_id", res.session_id, str),
    ]
    for key, value, kind in checks:
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise TypeError(f"AdapterResult.{key} has the wrong type: {value!r:.100}")
