"""Run one agent: start it, feed its output to its adapter's reader, stop it, judge the end.

This is the one supervisor of every kind of agent (a stream adapter's CLI, an ACP agent, a
judge agent, the task runner's goal agent). The adapter says how to start the agent and
how to read it (:mod:`axis_eval.adapters.readers`); everything about the process is
decided here: the spawn (through the caller's :data:`~axis_eval.execute.process.Spawner`,
:func:`~axis_eval.execute.process.spawn` by default), the time limit, the token limit, the
output limits, a cancel, stderr, the warnings, and the run's error and exit code.

Output limits (``RunControl.output``, the config's ``limits.output``): stdout reaches the
adapter's reader through a pump that counts it, with stderr, against ``bytes``; past it
nothing more is handed on and the agent is stopped. The transcript's caps (``events``,
``transcript_bytes``) are the builder's; reaching one stops the agent the same way. Every
buffer on the way is bounded, and a slow reader makes the agent wait on its pipe: the pump
pauses while the reader's buffer is full.

:func:`run_agent` never raises for anything the agent or the adapter's callbacks do: every
problem ends up in the record it fills (``error``, ``error_kind``, ``warnings``). The
record is the job's own :class:`~axis_eval.execute.models.JobOutcome` in a job, or an
:class:`AgentRun` elsewhere: one run's result is written once, into its final place.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from axis_eval._types import ErrorKind
from axis_eval.adapters.base import AdapterInput, AgentAdapter
from axis_eval.adapters.supervision import (
    MAX_LINE_BYTES,
    NOT_JSON,
    OutputReader,
    Reading,
    describe,
    exit_message,
    kept_output,
    stderr_tail,
)
from axis_eval.adapters.transcript_builder import TranscriptBuilder, size_text
from axis_eval.config.output_limit import OutputLimit
from axis_eval.execute.models import AgentRun
from axis_eval.execute.process import ManagedProcess, Spawner, spawn
from axis_eval.execute.pump_flow import PumpFlow
from axis_eval.execute.run_warnings import RunWarnings
from axis_eval.execute.supervise_start import MAX_ARG_BYTES, Refused, start_agent
from axis_eval.transcript.models import Transcript

__all__ = [
    "MAX_ARG_BYTES",
    "STDERR_CAP_BYTES",
    "AgentRun",
    "RunControl",
    "run_agent",
    "time_limit_message",
]

STDERR_CAP_BYTES = 100_000
"""stderr keeps at most this many trailing bytes."""
_READ_BYTES = 64 * 1024
_PUMP_BYTES = 1024 * 1024  # one read drains what the pipe's reader buffered (≤ 2 × its limit)
_READER_LIMIT_S = 30.0  # after stop() closed the pipes, readers only drain what is buffered
_AFTER_EXIT_S = 2.0  # a conversing agent exited unanswered: time for its last messages
_EXIT_WAIT_S = 1.0  # a conversing agent answered and got EOF: time to exit on its own
_WORK_ENTRIES = frozenset({"assistant", "thinking", "tool"})
_ERROR_CHARS = 2000

TokenVerdict = tuple[ErrorKind, str] | None


@dataclass
class RunControl:
    """How the caller steers a run while it is under way."""

    marker: str
    """``<run_token>/<job_id>``: every process of the job carries it."""
    grace_s: float = 5.0
    """Seconds between SIGTERM and SIGKILL when stopping the agent."""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    """Set it to stop the agent; the run ends with ``cancel_reason`` and kind ``cancelled``."""
    cancel_reason: str | None = None
    """Read when ``cancel`` is set; default ``Run cancelled``."""
    on_tokens: Callable[[int], TokenVerdict] | None = None
    """Called when the live token count grows; returning ``(kind, message)`` stops the agent.

    The count is the larger of ``ceil(chars / 5)`` and the usage the agent reported. It is
    called once more with the final count after the agent ended; that return value is ignored.
    """
    spawner: Spawner = spawn
    """What starts the agent: this host's process groups by default; a sandbox backend
    passes its own (the supervisor only uses what :class:`ManagedProcess` declares)."""
    output: OutputLimit = field(default_factory=OutputLimit)
    """How much the agent may print and the transcript keep; past a cap the agent is
    stopped and the run ends with kind ``output_limit``."""


R = TypeVar("R", bound=AgentRun)


def time_limit_message(seconds: float) -> str:
    """``Scenario time limit reached (15m)``: whole minutes, else one decimal (``0.5m``)."""
    minutes = seconds / 60
    if minutes == int(minutes):
        text = f"{int(minutes)}m"
    elif round(minutes, 1) >= 0.1:
        text = f"{minutes:.1f}m"
    else:
        text = f"{seconds:g}s"
    return f"Scenario time limit reached ({text})"


class _Run:
    """One run's state: its notes, stderr, the token count and why it stopped."""

    def __init__(self, adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl):
        self.inp = inp
        self.control = control
        self.notes = RunWarnings(self.output_grew)
        self.reader: OutputReader | None = None
        self.stop: tuple[ErrorKind, str] | None = None
        self.tokens_seen = 0
        self.stderr = bytearray()
        self.stderr_bytes = 0
        self.printed = 0
        """Bytes of stdout and stderr read so far (what ``limits.output.bytes`` caps)."""
        self.capped = False
        """An output cap was reached: what still comes is not handed on."""
        self.t0 = time.monotonic()
        self._wake: asyncio.Future[None] | None = None
        """Resolved by whichever comes first: exit, limit, time, cancel (or an answer)."""
        caps = control.output
        self.builder = TranscriptBuilder(
            adapter.name,
            inp.agent.model,
            max_entries=caps.events,
            max_text_bytes=caps.transcript_bytes,
            on_limit=self.output_limit,
        )
        self.builder.user(inp.prompt)

    def rouse(self, *_: object) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    # -- while it runs ----------------------------------------------------------------

    def output_limit(self, message: str) -> None:
        """An output cap was reached: nothing more is handed on, and the agent is stopped
        (the run ends with this, unless something stopped it first)."""
        self.capped = True
        if self.stop is None:
            self.stop = ("output_limit", message)
            self.rouse()

    def count(self, chunk: bytes) -> bytes:
        """Count ``chunk`` against the printed-bytes cap; the part within it (all of it, or
        its start when this is where the cap is passed, then the agent is stopped)."""
        cap = self.control.output.bytes
        room = cap - self.printed
        self.printed += len(chunk)
        if len(chunk) <= room:
            return chunk
        self.output_limit(
            f"Output limit reached: the agent printed more than {size_text(cap)} "
            "on stdout and stderr (limits.output.bytes)"
        )
        return chunk[: max(room, 0)]

    async def pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamReader, flow: PumpFlow
    ) -> None:
        """Hand stdout to the reader's stream, counted; pause while the reader is behind.

        Past the printed-bytes cap (or any output cap) nothing more is handed on: the
        reader gets EOF and finishes with what came before.
        """
        try:
            while not self.capped and (chunk := await source.read(_PUMP_BYTES)):
                chunk = self.count(chunk)
                if flow.gone:
                    continue  # the conversation is over: counted, dropped
                if chunk:
                    sink.feed_data(chunk)
                if not flow.ready.is_set():
                    await flow.ready.wait()
        finally:
            sink.feed_eof()

    def output_grew(self) -> None:
        """Re-check the token limit (the reader read more)."""
        if self.control.on_tokens is not None and self.stop is None:
            self.count_tokens()

    def count_tokens(self, *, final: bool = False) -> None:
        on_tokens = self.control.on_tokens
        if on_tokens is None or self.reader is None:
            return
        live = self.reader.live_tokens()
        if live <= self.tokens_seen:
            return
        self.tokens_seen = live
        try:
            verdict = on_tokens(live)
        except Exception as exc:
            self.notes.warn("token callback errors", f"on_tokens raised {describe(exc)}")
            return
        if verdict is not None and not final:
            self.stop = verdict
            self.rouse()

    async def read_stderr(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(_READ_BYTES):
            chunk = self.count(chunk)
            self.stderr_bytes += len(chunk)
            self.stderr += chunk
            if len(self.stderr) > 2 * STDERR_CAP_BYTES:
                del self.stderr[:-STDERR_CAP_BYTES]
            if self.capped:  # the rest is beyond the cap; the pipe closes on the stop
                break

    async def supervise(self, proc: ManagedProcess, reader: OutputReader) -> None:
        """Stream the output until the agent is done or must be stopped, then stop it."""
        loop = asyncio.get_running_loop()
        # The reader reads its own stream, fed by the pump: its line limit is ours (an
        # ACP reader's readline), and every byte is counted before any reader sees it.
        stdout = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        flow = PumpFlow()
        stdout.set_transport(flow)
        out = asyncio.ensure_future(reader.read(stdout, proc.stdin))
        out.add_done_callback(flow.reader_done)
        readers = [
            out,
            asyncio.ensure_future(self.read_stderr(proc.stderr)),
            asyncio.ensure_future(self.pump(proc.stdout, stdout, flow)),
        ]
        # One future woken by whichever comes first, instead of a task per cause raced by
        # asyncio.wait(): a measurable share of an instant job.
        self._wake = loop.create_future()
        proc.add_exit_callback(self.rouse)
        if reader.converses:
            out.add_done_callback(self.rouse)  # its answer ends the run
        cancelled = asyncio.ensure_future(self.control.cancel.wait())
        cancelled.add_done_callback(self.rouse)
        limit_s = self.inp.time_limit_s
        limited = limit_s > 0 and math.isfinite(limit_s)
        timer = loop.call_later(limit_s, self.rouse) if limited else None
        deadline = loop.time() + limit_s if limited else math.inf
        if self.stop is not None:
            self.rouse()
        try:
            await self._wake
            if reader.converses and proc.exited and not out.done() and self.stop is None:
                await self._last_words(loop, deadline)
            over = out.done() if reader.converses else proc.exited
            if not over and self.stop is None:
                if self.control.cancel.is_set():
                    self.stop = ("cancelled", self.control.cancel_reason or "Run cancelled")
                elif not proc.exited:
                    self.stop = ("timeout", time_limit_message(limit_s))
            if reader.converses and out.done() and not proc.exited and proc.stdin is not None:
                proc.stdin.close()  # answered: EOF, then a moment to exit on its own
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), _EXIT_WAIT_S)
            await proc.stop(self.control.grace_s)
            draining = readers[1:] if reader.converses else readers  # a conversation is over
            if not all(task.done() for task in draining):
                _, pending = await asyncio.wait(draining, timeout=_READER_LIMIT_S)
                if pending:
                    self.notes.warn(
                        "reader warnings", "the agent's output did not end; some may be missing"
                    )
        finally:
            if timer is not None:
                timer.cancel()
            cancelled.cancel()
            running: list[asyncio.Future[None]] = []
            for task in readers:
                if not task.done():
                    task.cancel()
                    running.append(task)
                elif not task.cancelled():
                    task.exception()  # retrieved, so never logged as unhandled
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _last_words(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """A conversing agent exited before it answered: its last messages may still be in
        the pipe. Wait a moment (within the time limit) for the conversation to end."""
        self._wake = loop.create_future()  # the answer, a token limit or a cancel
        wait_s = min(_AFTER_EXIT_S, deadline - loop.time())
        if wait_s > 0 and not self.control.cancel.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake, wait_s)

    # -- after it ended ---------------------------------------------------------------

    def stderr_text(self) -> str:
        if self.stderr_bytes > STDERR_CAP_BYTES:
            self.notes.warn(
                "stderr warnings",
                f"stderr was {self.stderr_bytes} bytes; kept the last {STDERR_CAP_BYTES}",
            )
        return bytes(self.stderr[-STDERR_CAP_BYTES:]).decode("utf-8", "replace")

    def error(
        self, reading: Reading, exit_code: int | None, stderr: str, transcript: Transcript
    ) -> tuple[str | None, ErrorKind | None]:
        """Why the run failed: a stop, the agent's own error, its exit, or no output."""
        if self.stop is not None:
            if reading.error and reading.error != self.stop[1]:
                self.notes.warn("agent errors", f"the agent also reported: {reading.error}")
            return self.stop[1], self.stop[0]
        if reading.error:
            return reading.error, "agent"
        result = transcript.result
        if exit_code != 0 and result is None and not reading.answered:
            return stderr_tail(stderr) or exit_message(exit_code), "agent"
        if result is None and not any(e.type in _WORK_ENTRIES for e in transcript.entries):
            message = "Agent produced no output"
            errors = [e.text for e in transcript.entries if e.type == "error" and e.text]
            if errors:
                message += f"; last error: {errors[-1][:_ERROR_CHARS]}"
            elif self.notes.counts.get(NOT_JSON):
                message += " it could read (stdout had lines that are not JSON; see warnings)"
            return message, "agent"
        return None, None

    def fill(self, record: R, reading: Reading, exit_code: int | None, stderr: str) -> R:
        """Write the run's result into ``record``."""
        transcript = self.builder.transcript  # the reader has finished it
        error, kind = self.error(reading, exit_code, stderr, transcript)
        if reading.answered and self.stop is None:
            # As AXIS: the agent answered (a result or a protocol error) and was then told
            # to exit, so its own exit code says nothing; report the session's outcome.
            exit_code = 0 if error is None else 1
        self.count_tokens(final=True)
        failed = error is not None or (transcript.result is None and exit_code != 0)
        return self._write(record, transcript, stderr, exit_code, error, kind, failed, reading)

    def refused(self, record: R, refusal: Refused) -> R:
        transcript = self.builder.finish()
        transcript.result = None
        return self._write(
            record, transcript, "", None, refusal.message, refusal.kind, True, Reading()
        )

    def _write(
        self,
        record: R,
        transcript: Transcript,
        stderr: str,
        exit_code: int | None,
        error: str | None,
        kind: ErrorKind | None,
        failed: bool,
        reading: Reading,
    ) -> R:
        record.transcript = transcript
        record.raw_output = kept_output(self.reader.raw_output) if self.reader is not None else []
        record.stderr = stderr
        record.exit_code = exit_code
        record.result = transcript.result
        record.error = error
        record.error_kind = kind if error is not None else None
        record.failed = failed
        record.started_at = transcript.started_at
        record.ended_at = transcript.ended_at
        record.duration_ms = int((time.monotonic() - self.t0) * 1000)
        record.warnings = self.notes.render(reading.warnings)
        return record


@overload
async def run_agent(
    adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl
) -> AgentRun: ...
@overload
async def run_agent(
    adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl, into: R
) -> R: ...
async def run_agent(
    adapter: AgentAdapter[Any],
    inp: AdapterInput,
    control: RunControl,
    into: AgentRun | None = None,
) -> AgentRun:
    """Run the agent once in ``inp.workspace``, write what it did into ``into`` (a new
    :class:`AgentRun` without it) and return that record.

    The argv is the adapter's command line (``command`` or ``resolve_command(inp)``, then
    ``build_args(inp)``); the prompt goes on it, to stdin (``prompt_via="stdin"``) or, for
    an ACP agent, in ``session/prompt``. The agent is stopped (SIGTERM, ``grace_s``,
    SIGKILL, its whole process group and every process with its marker) on the time limit,
    on ``control.cancel`` and when ``control.on_tokens`` says so, and cleaned up after a
    normal exit too. Never raises for the agent's or the adapter's faults.
    """
    record = AgentRun() if into is None else into
    run = _Run(adapter, inp, control)
    try:
        cancelled = control.cancel_reason or "Run cancelled" if control.cancel.is_set() else None
        proc, reader = await start_agent(
            adapter, inp, cancelled, control.marker, run.builder, run.notes, control.spawner
        )
    except Refused as refusal:
        return run.refused(record, refusal)
    run.reader = reader
    try:
        await run.supervise(proc, reader)
    finally:
        try:
            with contextlib.suppress(Exception):
                await proc.stop(control.grace_s)
        finally:
            await reader.close()
    stderr = run.stderr_text()
    reading = await reader.finish(proc.returncode, stderr, run.stop is not None)
    return run.fill(record, reading, proc.returncode, stderr)
