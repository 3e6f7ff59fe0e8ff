"""Read an agent that prints NDJSON (:class:`LinesMode`) or free text (:class:`AggregateMode`).

:class:`StreamReader` is the :class:`~axis_eval.adapters.supervision.OutputReader` of every
adapter built with :func:`~axis_eval.adapters.base.create_agent_adapter`: it splits stdout
into lines or decodes it in chunks, hands each to the adapter's callbacks, and asks
``get_result`` for the answer at the end. A callback that raises never ends the run: the
exception becomes a warning and a transcript error.
"""

from __future__ import annotations

import asyncio
import codecs
import json
from collections.abc import Callable
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.clock import now_iso
from axis_eval.adapters import base
from axis_eval.adapters.supervision import NOT_JSON, Reading, RunNotes, describe
from axis_eval.adapters.transcript_builder import TranscriptBuilder

__all__ = ["StreamReader"]

_READ_BYTES = 64 * 1024


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
        self.raw_output: list[str] = []
        """stdout: one item per non-blank line (lines mode) or per decoded chunk (aggregate)."""
        self.lines = 0

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
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            self.notes.warn(
                NOT_JSON, f"stdout line {self.lines} is not JSON, kept as raw text: {text[:200]}"
            )
            return
        stream = self.adapter.stream
        assert isinstance(stream, base.LinesMode)
        self.call("on_line", stream.on_line, value, self.ctx)
        self.notes.output_grew()

    def on_chunk(self, text: str) -> None:
        stream = self.adapter.stream
        assert isinstance(stream, base.AggregateMode)
        self.raw_output.append(text)
        self.ctx.feed_text(text)
        self.call("on_chunk", stream.on_chunk, text, self.ctx)
        self.notes.output_grew()

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
            return
        # Split by hand: StreamReader.readline() fails on a line over its buffer limit.
        pending = bytearray()
        while chunk := await stdout.read(_READ_BYTES):
            parts = chunk.split(b"\n")
            pending += parts[0]
            if len(parts) > 1:
                self.on_line(bytes(pending))
                for part in parts[1:-1]:
                    self.on_line(part)
                pending = bytearray(parts[-1])
            await asyncio.sleep(0)
        if pending:
            self.on_line(bytes(pending))

    # -- after it ended ---------------------------------------------------------------

    async def close(self) -> None:
        """Nothing to release: the supervisor owns the pipes."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Run ``on_end`` and ``get_result``; the transcript is finished on return."""
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
        result = res.result if res is not None else None
        transcript = builder.finish()
        transcript.result = result
        transcript.ended_at = ended_at
        error = res.error if res is not None else problem
        return Reading(error, warnings=self.ctx.warnings)


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
