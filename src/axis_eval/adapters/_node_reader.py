"""The reader of a JavaScript adapter's agent: its stream callbacks run in a per-job Node host.

The supervisor reads the agent's stdout as for any stream adapter (lines are split, free
text decoded, everything bounded, see :mod:`.streams`); instead of Python callbacks, each
batch of lines goes to the adapter's ``onLine`` (the raw line, as AXIS gives it) and each
piece of free text to ``onChunk``, in a Node host started for this job (and stopped with
it). The entries the adapter pushes onto ``ctx.transcript`` come back with each answer and
are recorded as they arrive (:mod:`._node_entries`); ``ctx.feedAssistantText`` counts
towards the live token estimate. At the end ``onEnd`` and ``getResult`` run there.

A callback that throws, hangs past its time limit, or returns something malformed fails
the run with an error that names it; nothing more is sent to the adapter then (``getResult``
still runs after a throw, for the usage it reports), and the harness goes on.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

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
        self._batch: list[str] = []
        self._flush_due = False
        self._started = False
        self.host = NodeHost(list(adapter.node_argv), adapter.module, adapter.name)

    # -- talking to the host --------------------------------------------------------------

    def _fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = message
            self.builder.error(message)
            self.notes.warn("adapter errors", message)

    def _call(
        self, op: str, where: str, *, after_failure: bool = False, **payload: Any
    ) -> Answer | None:
        if self.host.dead is not None or (self.failure is not None and not after_failure):
            return None
        try:
            answer = self.host.call(op, where, **payload)
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

    def _begin(self) -> None:
        """Wait for the module to load and run ``initialState()`` (once)."""
        if self._started:
            return
        self._started = True
        try:
            loaded = self.host.loaded()
        except HostError as exc:
            self._fail(f"{self.node.name}: {exc.message}")
            return
        if not loaded.ok:
            self._fail(f"{self.node.name}: the adapter module failed to load in the job's host")
            return
        self._call("start", "initialState")

    # -- while it runs ------------------------------------------------------------------

    def on_line(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        self.lines += 1
        self.raw_output.append(text)
        if self.builder.closed or self.failure is not None:
            return
        self._batch.append(text)
        if not self._flush_due:  # the lines of one read go together, after it
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        texts, self._batch = self._batch, []
        if texts and not self.builder.closed:
            self._call("lines", "onLine", texts=texts)

    def feed(self, text: str) -> None:
        self._call("chunk", "onChunk", text=text)
        self.notes.output_grew()

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        self._begin()
        await super().read(stdout, stdin)

    # -- after it ended -----------------------------------------------------------------

    async def close(self) -> None:
        """Nothing yet: :meth:`finish` (which the supervisor calls after this) still needs
        the host, and stops it. A reader dropped unfinished stops it when collected."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Run ``onEnd`` and ``getResult`` in the host; the transcript is finished on return."""
        self._begin()
        self._flush()
        self.feed_tail()
        if self.node.has_on_end:
            self._call("end", "onEnd")
        builder = self.builder
        ended_at = now_iso()
        started_at = builder.transcript.started_at or ended_at
        answer = self._call(
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


def _cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None
