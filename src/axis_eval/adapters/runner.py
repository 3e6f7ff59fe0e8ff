"""Run one agent through its adapter: spawn, stream, stop on limits, and judge the outcome.

:func:`run_adapter` is the Python counterpart of what AXIS's ``createAgentAdapter`` does in
``run()``. It never raises for anything the agent or the adapter's callbacks do: every
problem ends up in :class:`AgentOutput` (``error``, ``error_kind``, ``warnings``).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import math
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from axis_eval._types import ErrorKind, TokenUsage
from axis_eval.adapters.base import (
    AdapterConfigError,
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    AggregateMode,
    LinesMode,
    ResultContext,
    StreamContext,
    resolve_argv_prefix,
)
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.execute.process import AgentProcess, ProcessSpec, SpawnFailed, spawn
from axis_eval.transcript.models import Transcript

__all__ = [
    "MAX_ARG_BYTES",
    "STDERR_CAP_BYTES",
    "AgentOutput",
    "RunControl",
    "run_adapter",
    "time_limit_message",
]

MAX_ARG_BYTES = 131072
"""Linux ``MAX_ARG_STRLEN``: the most bytes one argument may take, its terminating NUL included."""
STDERR_CAP_BYTES = 100_000
"""stderr keeps at most this many trailing bytes."""
_ERROR_TAIL_CHARS = 2000
_READ_BYTES = 64 * 1024
_READER_LIMIT_S = 30.0  # after stop() closed the pipes, readers only drain what is buffered
_REPEATS_SHOWN = 10  # warnings of one kind recorded individually before being counted
_WARNINGS_SHOWN = 100
_WORK_ENTRIES = frozenset({"assistant", "thinking", "tool"})

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


@dataclass
class AgentOutput:
    """Everything one run of an agent left behind."""

    transcript: Transcript
    raw_output: list[str]
    """stdout: one item per non-blank line (lines mode) or per decoded chunk (aggregate)."""
    stderr: str
    """The last 100,000 bytes of stderr, decoded."""
    exit_code: int | None
    """A negative signal number when a signal ended the agent; None when nothing ran."""
    result: str | None
    error: str | None
    error_kind: ErrorKind | None
    failed: bool
    started_at: str
    ended_at: str
    duration_ms: int
    warnings: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


class _Refused(Exception):
    """The run cannot start; nothing was spawned."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


class _Notes:
    """Warnings of the run, with repeats of one kind counted instead of listed."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.counts: dict[str, int] = {}

    def add(self, key: str, message: str) -> bool:
        """Record a warning; False once ``key`` has been recorded too often."""
        count = self.counts[key] = self.counts.get(key, 0) + 1
        if count <= _REPEATS_SHOWN:
            self.items.append(message)
        return count <= _REPEATS_SHOWN

    def render(self, extra: list[str]) -> list[str]:
        out = list(self.items)
        out += [
            f"… and {n - _REPEATS_SHOWN} more {key}"
            for key, n in self.counts.items()
            if n > _REPEATS_SHOWN
        ]
        seen: dict[str, int] = {}
        for message in extra:
            seen[message] = seen.get(message, 0) + 1
        out += [m if n == 1 else f"{m} ({n} times)" for m, n in seen.items()]
        if len(out) > _WARNINGS_SHOWN:
            out = [*out[:_WARNINGS_SHOWN], f"… and {len(out) - _WARNINGS_SHOWN} more warnings"]
        return out


def _stderr_error(stderr: str) -> str | None:
    """The last non-empty stderr lines, at most 2000 characters."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    picked: list[str] = []
    size = 0
    for line in reversed(lines):
        if picked and size + len(line) + 1 > _ERROR_TAIL_CHARS:
            break
        picked.append(line[-_ERROR_TAIL_CHARS:])
        size += len(picked[-1]) + 1
    return "\n".join(reversed(picked)) or None


def _exit_message(code: int | None) -> str:
    if code is None:
        return "Agent process did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Agent process was killed by {name}"
    return f"Agent process exited with non-zero code {code}"


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


class _Run:
    """One run's state: the transcript, raw output, warnings and why it stopped."""

    def __init__(self, adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl):
        self.adapter = adapter
        self.inp = inp
        self.control = control
        self.builder = TranscriptBuilder(adapter.name, inp.agent.model)
        self.builder.user(inp.prompt)
        self.ctx: StreamContext[Any] | None = None
        self.raw_output: list[str] = []
        self.notes = _Notes()
        self.stop: tuple[ErrorKind, str] | None = None
        self.rouse: Callable[[], None] = lambda: None
        """Wakes :meth:`supervise` (set while it runs): a limit was hit."""
        self.tokens_seen = 0
        self.stderr = bytearray()
        self.stderr_bytes = 0
        self.lines = 0
        self.started_at = _now()
        self.t0 = time.monotonic()

    # -- before the spawn -------------------------------------------------------------

    def command(self) -> tuple[list[str], bytes | None]:
        """The argv and stdin bytes, after every check; raises :class:`_Refused`."""
        name = self.adapter.name
        try:
            argv = resolve_argv_prefix(self.adapter, self.inp)
            args = self.adapter.build_args(self.inp)
            if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
                raise AdapterConfigError(f"{name}: build_args must return a list of strings")
            argv += list(args)
            self.ctx = StreamContext(self.adapter.initial_state(), self.builder)
        except AdapterConfigError as exc:
            raise _Refused("spawn", exc.message) from exc
        except Exception as exc:
            raise _Refused("spawn", f"{name}: {_describe(exc)}") from exc
        via_stdin = self.adapter.prompt_via == "stdin"
        prompt = self.inp.prompt
        for i, arg in enumerate(argv):
            self._check_arg(i, arg, via_stdin)
            if via_stdin and prompt and arg == prompt:
                raise _Refused(
                    "spawn",
                    f"The {name} adapter sends the prompt on stdin (prompt_via='stdin') but "
                    f"build_args also puts it on the command line (argument {i}); leave it out",
                )
        return argv, (_encode(prompt) if via_stdin else None)

    def _check_arg(self, i: int, arg: str, via_stdin: bool) -> None:
        name = self.adapter.name
        what = "the prompt" if self.inp.prompt and self.inp.prompt in arg else f"argument {i}"
        hint = (
            ""
            if via_stdin
            else (
                f"; set prompt_via='stdin' on the {name} adapter so the prompt is written to "
                "the agent's stdin instead"
            )
        )
        if "\0" in arg:
            raise _Refused(
                "spawn",
                f"Cannot start {name}: {what} contains a NUL byte, which a command "
                f"line cannot carry{hint}",
            )
        try:
            size = len(os.fsencode(arg))
        except UnicodeEncodeError as exc:
            raise _Refused("spawn", f"Cannot start {name}: {what} cannot be encoded") from exc
        if size + 1 > MAX_ARG_BYTES:
            raise _Refused(
                "spawn",
                f"Cannot start {name}: {what} is {size} bytes, more than one "
                f"command-line argument may hold on Linux ({MAX_ARG_BYTES - 1}){hint}",
            )

    # -- while it runs ----------------------------------------------------------------

    def call(self, what: str, fn: Callable[..., object], *args: object) -> None:
        """Run an adapter callback; an exception becomes a warning and a transcript error."""
        try:
            fn(*args)
        except Exception as exc:
            message = f"{self.adapter.name}: {what} raised {_describe(exc)}"
            if self.notes.add(f"{what} errors", message):
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
            self.notes.add(
                "stdout lines that are not JSON",
                f"stdout line {self.lines} is not JSON, kept as raw text: {text[:200]}",
            )
            return
        stream = self.adapter.stream
        assert self.ctx is not None and isinstance(stream, LinesMode)
        self.call("on_line", stream.on_line, value, self.ctx)
        self.count_tokens()

    def on_chunk(self, text: str) -> None:
        assert self.ctx is not None and isinstance(self.adapter.stream, AggregateMode)
        self.raw_output.append(text)
        self.ctx.feed_text(text)
        self.call("on_chunk", self.adapter.stream.on_chunk, text, self.ctx)
        self.count_tokens()

    def live_tokens(self) -> int:
        estimate = self.ctx.estimated_tokens if self.ctx else 0
        return max(estimate, self.builder.transcript.usage.total)

    def count_tokens(self, *, final: bool = False) -> None:
        on_tokens = self.control.on_tokens
        live = self.live_tokens()
        if on_tokens is None or live <= self.tokens_seen or (self.stop and not final):
            return
        self.tokens_seen = live
        try:
            verdict = on_tokens(live)
        except Exception as exc:
            self.notes.add("token callback errors", f"on_tokens raised {_describe(exc)}")
            return
        if verdict is not None and not final:
            self.stop = verdict
            self.rouse()

    async def read_stdout(self, reader: asyncio.StreamReader) -> None:
        if isinstance(self.adapter.stream, AggregateMode):
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while chunk := await reader.read(_READ_BYTES):
                if text := decoder.decode(chunk):
                    self.on_chunk(text)
                await asyncio.sleep(0)
            if text := decoder.decode(b"", final=True):
                self.on_chunk(text)
            return
        pending = bytearray()
        while chunk := await reader.read(_READ_BYTES):
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

    async def read_stderr(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(_READ_BYTES):
            self.stderr_bytes += len(chunk)
            self.stderr += chunk
            if len(self.stderr) > 2 * STDERR_CAP_BYTES:
                del self.stderr[:-STDERR_CAP_BYTES]

    async def supervise(self, proc: AgentProcess) -> None:
        """Stream the output until the agent exits or must be stopped, then stop it."""
        loop = asyncio.get_running_loop()
        readers = [
            asyncio.ensure_future(self.read_stdout(proc.stdout)),
            asyncio.ensure_future(self.read_stderr(proc.stderr)),
        ]
        # One future woken by whichever comes first (exit, limit, time, cancel), instead of
        # a task per cause raced by asyncio.wait(): a measurable share of an instant job.
        wake: asyncio.Future[None] = loop.create_future()

        def rouse(*_: object) -> None:
            if not wake.done():
                wake.set_result(None)

        self.rouse = rouse
        proc.add_exit_callback(rouse)
        cancelled = asyncio.ensure_future(self.control.cancel.wait())
        cancelled.add_done_callback(rouse)
        limit_s = self.inp.time_limit_s
        timer = loop.call_later(limit_s, rouse) if limit_s > 0 and math.isfinite(limit_s) else None
        if self.stop is not None:
            rouse()
        try:
            await wake
            if not proc.exited and self.stop is None:
                if self.control.cancel.is_set():
                    self.stop = ("cancelled", self.control.cancel_reason or "Run cancelled")
                else:
                    self.stop = ("timeout", time_limit_message(limit_s))
            await proc.stop(self.control.grace_s)
            if not all(task.done() for task in readers):
                _, pending = await asyncio.wait(readers, timeout=_READER_LIMIT_S)
                if pending:
                    self.notes.add("reader", "the agent's output did not end; some may be missing")
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

    # -- after it ended ---------------------------------------------------------------

    def stderr_text(self) -> str:
        if self.stderr_bytes > STDERR_CAP_BYTES:
            self.notes.add(
                "stderr", f"stderr was {self.stderr_bytes} bytes; kept the last {STDERR_CAP_BYTES}"
            )
        return bytes(self.stderr[-STDERR_CAP_BYTES:]).decode("utf-8", "replace")

    def finish(self, exit_code: int | None, stderr: str) -> AgentOutput:
        """Run ``on_end`` and ``get_result``, and work out whether the run failed."""
        assert self.ctx is not None
        if self.adapter.stream.on_end is not None:
            self.call("on_end", self.adapter.stream.on_end, self.ctx)
        ended_at = _now()
        name = self.adapter.name
        res: AdapterResult | None = None
        problem: str | None = None
        try:
            got = self.adapter.get_result(
                ResultContext(
                    self.ctx.state, self.builder, exit_code, stderr, self.started_at, ended_at
                )
            )
            if not isinstance(got, AdapterResult):
                raise TypeError(f"get_result must return an AdapterResult, got {got!r:.100}")
            _check_result(got)
            res = got
        except Exception as exc:
            problem = f"{name}: get_result raised {_describe(exc)}"
            self.notes.add("get_result", problem)
            self.builder.error(problem)
        if res is not None:
            if res.usage is not None:
                self.builder.set_usage(res.usage)
            if res.cost_usd is not None:
                self.builder.set_cost(res.cost_usd)
            if res.session_id is not None:
                self.builder.transcript.session_id = res.session_id
        result = res.result if res is not None else None
        transcript = self.builder.finish()
        transcript.result = result
        transcript.ended_at = ended_at
        error, kind = self._error(res, problem, result, exit_code, stderr, transcript)
        self.count_tokens(final=True)
        failed = error is not None if result is not None else (exit_code != 0 or error is not None)
        return self.output(transcript, stderr, exit_code, result, error, kind, failed, ended_at)

    def _error(
        self,
        res: AdapterResult | None,
        problem: str | None,
        result: str | None,
        exit_code: int | None,
        stderr: str,
        transcript: Transcript,
    ) -> tuple[str | None, ErrorKind | None]:
        reported = res.error if res is not None else problem
        if self.stop is not None:
            if reported and reported != self.stop[1]:
                self.notes.add("agent error", f"the agent also reported: {reported}")
            return self.stop[1], self.stop[0]
        if reported:
            return reported, "agent"
        if exit_code != 0 and result is None:
            return _stderr_error(stderr) or _exit_message(exit_code), "agent"
        if result is None and not any(e.type in _WORK_ENTRIES for e in transcript.entries):
            message = "Agent produced no output"
            errors = [e.text for e in transcript.entries if e.type == "error" and e.text]
            if errors:
                message += f"; last error: {errors[-1][:_ERROR_TAIL_CHARS]}"
            elif self.notes.counts.get("stdout lines that are not JSON"):
                message += " it could read (stdout had lines that are not JSON; see warnings)"
            return message, "agent"
        return None, None

    def output(
        self,
        transcript: Transcript,
        stderr: str,
        exit_code: int | None,
        result: str | None,
        error: str | None,
        kind: ErrorKind | None,
        failed: bool,
        ended_at: str,
    ) -> AgentOutput:
        extra = self.ctx.warnings if self.ctx is not None else []
        return AgentOutput(
            transcript=transcript,
            raw_output=self.raw_output,
            stderr=stderr,
            exit_code=exit_code,
            result=result,
            error=error,
            error_kind=kind if error is not None else None,
            failed=failed,
            started_at=self.started_at,
            ended_at=ended_at,
            duration_ms=int((time.monotonic() - self.t0) * 1000),
            warnings=self.notes.render(extra),
        )

    def refused(self, kind: ErrorKind, message: str) -> AgentOutput:
        transcript = self.builder.finish()
        transcript.result = None
        ended_at = transcript.ended_at or _now()
        return self.output(transcript, "", None, None, message, kind, True, ended_at)


def _check_result(res: AdapterResult) -> None:
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


def _describe(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


async def run_adapter(
    adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl
) -> AgentOutput:
    """Run the agent once in ``inp.workspace`` and return what it did.

    The argv is ``resolve_command(inp) + build_args(inp)``; the prompt goes on it or, with
    ``prompt_via="stdin"``, to stdin. The agent is stopped (SIGTERM, ``grace_s``, SIGKILL,
    its whole process group and every process with its marker) on the time limit, on
    ``control.cancel`` and when ``control.on_tokens`` says so, and cleaned up after a normal
    exit too. Never raises for the agent's or the adapter's faults.

    An adapter with its own ``run(inp, control)`` coroutine (an ACP adapter, which frames
    its own messages on stdin and stdout) runs through that instead, with the same contract.
    """
    own_run = getattr(adapter, "run", None)
    if callable(own_run):
        output: AgentOutput = await own_run(inp, control)
        return output
    run = _Run(adapter, inp, control)
    try:
        argv, stdin_data = run.command()
        if control.cancel.is_set():
            raise _Refused("cancelled", control.cancel_reason or "Run cancelled")
        if adapter.prepare is not None:
            try:
                adapter.prepare(inp)
            except Exception as exc:
                raise _Refused("setup", f"{adapter.name}: prepare raised {_describe(exc)}") from exc
        spec = ProcessSpec(argv, inp.workspace, dict(inp.env), control.marker, stdin_data)
        try:
            proc = await spawn(spec)
        except SpawnFailed as exc:
            where = " (is it installed and on PATH?)" if "not found" in str(exc) else ""
            raise _Refused(
                "spawn", f"Could not start the {adapter.name} agent: {exc}{where}"
            ) from exc
        except (OSError, ValueError) as exc:
            raise _Refused("spawn", f"Could not start the {adapter.name} agent: {exc}") from exc
    except _Refused as refused:
        return run.refused(refused.kind, refused.message)
    try:
        await run.supervise(proc)
    finally:
        with contextlib.suppress(Exception):
            await proc.stop(control.grace_s)
    return run.finish(proc.returncode, run.stderr_text())
