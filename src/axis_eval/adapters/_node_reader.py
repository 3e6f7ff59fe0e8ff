"""The reader of a JavaScript adapter's agent: its stream callbacks run in a per-job Node host.

The supervisor reads the agent's stdout as for any stream adapter (lines are split, free
text decoded, everything bounded, see :mod:`.streams`); instead of Python callbacks, each
batch of lines goes to the adapter's ``onLine`` (the raw line, as AXIS gives it) and each
piece of free text to ``onChunk``, in a Node host started for this job (and stopped with
it). The entries the adapter pushes onto ``ctx.transcript`` come back with each answer and
are recorded as they arrive (:mod:`._node_entries`); ``ctx.feedAssistantText`` counts
towards the live token estimate. At the end ``onEnd`` and ``getResult`` run there.

Every call is awaited (:meth:`~._node_host.NodeHost.acall`): the event loop runs the other
jobs while a callback runs. What one read brought is handed on before the next read, in
order, so the agent's output waits in its pipe behind a slow callback.

A callback that throws, hangs past its time limit, or returns something malformed fails
the run with an error that names it; nothing more is sent to the adapter then (``getResult``
still runs after a throw, for the usage it reports), and the harness goes on.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from axis_eval._util.clock import now_iso
from axis_eval.adapters._node_entries import record_entry, usage_from
from axis_eval.adapters._node_host import Answer, HostError, NodeHost
from axis_eval.adapters.base import AdapterInput, AgentAdapter
from axis_eval.adapters.streams import StreamReader
from axis_eval.adapters.supervision import OutputReader, Reading, RunNotes
from axis_eval.adapters.transcript_builder import TranscriptBuilder

__all__ = ["NodeAgentAdapter", "NodeReader"]


@dataclass(frozen=True)
class NodeAgentAdapter(AgentAdapter[Any]):
    """A ``createAgentAdapter`` adapter hosted in Node; read by a per-job Node host."""

    module: str = ""
    node_argv: tuple[str, ...] = ()
    has_on_end: bool = False

    def open_reader(
        self, inp: AdapterInput, builder: TranscriptBuilder, notes: RunNotes
    ) -> OutputReader:
        return NodeReader(self, inp, builder, notes)


class NodeReader(StreamReader):
    """Feeds one agent's stdout to a JavaScript adapter's callbacks in a Node host."""

    def __init__(
        self,
        adapter: NodeAgentAdapter,
        inp: AdapterInput,
        builder: TranscriptBuilder,
        notes: RunNotes,
    ) -> None:
        super().__init__(adapter, inp, builder, notes)
        self.node = adapter
        self.failure: str | None = None
        """The first callback failure: the run's error."""
        self._pending: list[tuple[str, str]] = []
        """What the last read brought, for :meth:`_flush`: ``("lines", line)`` or
        ``("chunk", text)``."""
        self._started = False
        self.host = NodeHost(list(adapter.node_argv), adapter.module, adapter.name)

    # -- talking to the host --------------------------------------------------------------

    def _fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = message
            self.builder.error(message)
            self.notes.warn("adapter errors", message)

    async def _call(
        self, op: str, where: str, *, after_failure: bool = False, **payload: Any
    ) -> Answer | None:
        if self.host.dead is not None or (self.failure is not None and not after_failure):
            return None
        try:
            answer = await self.host.acall(op, where, **payload)
        except HostError as exc:
            self._fail(f"{self.node.name}: {exc.message}")
            return None
        for entry in answer.entries:
            if not record_entry(self.builder, entry):
                self.notes.warn(
                    "transcript warnings",
                    f"{self.node.name}: a transcript entry of unknown type was kept as system",
                )
        if answer.fed:
            self.ctx.chars += answer.fed
        if answer.entries or answer.fed:
            self.notes.output_grew()
        if not answer.ok:
            self._fail(f"{self.node.name}: {answer.where or where} threw {answer.error}")
            return None
        return answer

    async def _begin(self) -> None:
        """Wait for the module to load and run ``initialState()`` (once)."""
        if self._started:
            return
        self._started = True
        try:
            loaded = await self.host.aloaded()
        except HostError as exc:
            self._fail(f"{self.node.name}: {exc.message}")
            return
        if not loaded.ok:
            self._fail(f"{self.node.name}: the adapter module failed to load in the job's host")
            return
        await self._call("start", "initialState")

    # -- while it runs ------------------------------------------------------------------

    def on_line(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        self.lines += 1
        self.raw_output.append(text)
        if self.builder.closed or self.failure is not None:
            return
        self._pending.append(("lines", text))

    def feed(self, text: str) -> None:
        self._pending.append(("chunk", text))

    async def _flush(self) -> None:
        """Hand what the last read brought to the adapter, in order: its lines as one
        ``onLine`` batch, each piece of free text to ``onChunk``. Awaited, so other jobs run
        on while the callbacks do, and before the next read, so the agent's output waits in
        its pipe meanwhile (as it would behind a slow Python callback)."""
        while self._pending:
            pending, self._pending = self._pending, []
            texts = [text for kind, text in pending if kind == "lines"]
            if texts:
                if not self.builder.closed:
                    await self._call("lines", "onLine", texts=texts)
                continue
            for _kind, text in pending:  # free text (a reader is in one mode only)
                await self._call("chunk", "onChunk", text=text)
                self.notes.output_grew()

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        await self._begin()
        await super().read(cast("asyncio.StreamReader", _Paced(stdout, self._flush)), stdin)
        await self._flush()

    # -- after it ended -----------------------------------------------------------------

    async def close(self) -> None:
        """Nothing yet: :meth:`finish` (which the supervisor calls after this) still needs
        the host, and stops it. A reader dropped unfinished stops it when collected."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Run ``onEnd`` and ``getResult`` in the host; the transcript is finished on return."""
        await self._begin()
        self.feed_tail()
        await self._flush()
        if self.node.has_on_end:
            await self._call("end", "onEnd")
        builder = self.builder
        ended_at = now_iso()
        started_at = builder.transcript.started_at or ended_at
        answer = await self._call(
            "result",
            "getResult",
            after_failure=True,
            exitCode=exit_code,
            stderr=stderr,
            startTime=started_at,
            endTime=ended_at,
        )
        result, error = self._result(answer) if answer is not None else (None, None)
        self.host.close()
        transcript = builder.finish()
        transcript.result = builder.keep_text(result)
        transcript.ended_at = ended_at
        return Reading(self.failure or error, warnings=self.ctx.kept_warnings())

    def _result(self, answer: Answer) -> tuple[str | None, str | None]:
        """``getResult``'s ``{result, metadata}``: the answer and the agent's error."""
        value = answer.value
        name = self.node.name
        if not isinstance(value, dict) or not (
            value.get("result") is None or isinstance(value.get("result"), str)
        ):
            self._fail(
                f"{name}: getResult must return {{result: string | null, metadata?}}, "
                f"got {value!r:.200}"
            )
            return None, None
        metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
        assert isinstance(metadata, dict)
        usage = usage_from(metadata.get("tokenUsage"))
        if usage is not None:
            self.builder.set_usage(usage)
        cost = _cost(metadata.get("totalCostUsd"))
        if cost is not None:
            self.builder.set_cost(cost)
        if isinstance(metadata.get("sessionId"), str):
            self.builder.transcript.session_id = metadata["sessionId"]
        error = metadata.get("error")
        return value.get("result"), error if isinstance(error, str) and error else None


class _Paced:
    """The agent's stdout as :class:`StreamReader` reads it, with the adapter's callbacks
    run (awaited) on what one read brought before the next read."""

    def __init__(self, stdout: asyncio.StreamReader, flush: Callable[[], Awaitable[None]]) -> None:
        self.stdout = stdout
        self.flush = flush

    async def read(self, n: int = -1) -> bytes:
        await self.flush()
        return await self.stdout.read(n)


def _cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
