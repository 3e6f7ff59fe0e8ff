"""Run one ACP session: spawn the agent, speak JSON-RPC over its stdio, stop it on limits.

The ``acp`` package (PyPI ``agent-client-protocol``) is the client: it correlates
requests, validates the typed handshake and prompt calls and routes the agent's own
requests (permission, file reads and writes) to :class:`AcpClient`. It runs over
:class:`StdioTransport`, a message transport on the pipes our process module gives us.
:class:`_Session` sees every message in both directions first: it records them all and
maps ``session/update`` notifications, in arrival order, into :class:`AcpTranscript`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import acp
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from pydantic import ValidationError

from axis_eval._types import ErrorKind, TokenUsage
from axis_eval._version import __version__
from axis_eval.adapters import prices
from axis_eval.adapters._acp_client import AcpClient, StdioTransport, acp_mcp_servers
from axis_eval.adapters._acp_transcript import AcpTranscript, model_usage, prompt_usage
from axis_eval.adapters.base import AdapterConfigError, AdapterInput, resolve_argv_prefix
from axis_eval.adapters.runner import (
    STDERR_CAP_BYTES,
    AgentOutput,
    RunControl,
    time_limit_message,
)
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.execute.process import AgentProcess, ProcessSpec, SpawnFailed, spawn
from axis_eval.transcript.models import Transcript

if TYPE_CHECKING:
    from axis_eval.adapters.acp import AcpAdapter

__all__ = ["STOP_REASON_ERRORS", "acp_mcp_servers", "run_acp_session"]

STOP_REASON_ERRORS = {
    "cancelled": "Agent cancelled",
    "max_tokens": "Agent hit max tokens limit",
    "refusal": "Agent refused to continue",
    "max_turn_requests": "Agent exceeded max turn requests",
}
"""``session/prompt`` stop reasons that fail the run, with AXIS's messages."""

_EXIT_WAIT_S = 1.0  # after the prompt returned and stdin closed: time to exit on its own
_AFTER_EXIT_S = 2.0  # after the agent exited: time for its last messages to arrive
_READER_LIMIT_S = 10.0
_ERROR_TAIL_CHARS = 2000
_WARNINGS_SHOWN = 20


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _describe(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class _Refused(Exception):
    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


class _Session:
    """One ACP run's state: transcript, raw messages, warnings and why it stopped."""

    def __init__(self, adapter: AcpAdapter, inp: AdapterInput, control: RunControl) -> None:
        self.adapter = adapter
        self.inp = inp
        self.control = control
        self.builder = TranscriptBuilder(adapter.name, inp.agent.model)
        self.builder.user(inp.prompt)
        self.acp = AcpTranscript(self.builder)
        self.raw_output: list[str] = []
        self.warnings: list[str] = []
        self.warning_counts: dict[str, int] = {}
        self.stop: tuple[ErrorKind, str] | None = None
        self.limit_hit = asyncio.Event()
        self.tokens_seen = 0
        self.stderr = bytearray()
        self.stderr_bytes = 0
        self.started_at = _now()
        self.t0 = time.monotonic()
        self.methods: dict[Any, str] = {}  # our request ids → method
        self.results: dict[str, Any] = {}  # method → raw result
        self.agent_info: dict[str, Any] = {}
        self.step = "initialize"
        self.failure: str | None = None
        self.disconnected = False
        self.prompt_result: dict[str, Any] | None = None
        self.session_model: str | None = None

    # -- messages ---------------------------------------------------------------------

    def warn(self, key: str, message: str) -> None:
        count = self.warning_counts[key] = self.warning_counts.get(key, 0) + 1
        if count <= _WARNINGS_SHOWN:
            self.warnings.append(message)

    def record(self, direction: str, message: dict[str, Any]) -> None:
        line = {"t": round(time.monotonic() - self.t0, 3), "dir": direction, "msg": message}
        self.raw_output.append(json.dumps(line, ensure_ascii=False, default=str))
        if direction == "client->agent" and "method" in message and "id" in message:
            self.methods[message["id"]] = str(message["method"])

    def non_json(self, text: str) -> None:
        line = {"t": round(time.monotonic() - self.t0, 3), "dir": "agent->client", "text": text}
        self.raw_output.append(json.dumps(line, ensure_ascii=False))
        self.warn("stdout", f"the agent printed a stdout line that is not JSON-RPC: {text[:200]}")

    def incoming(self, message: dict[str, Any]) -> bool:
        """Record and map one message from the agent; False when the SDK need not see it."""
        self.record("agent->client", message)
        method = message.get("method")
        params = message.get("params")
        if method == "session/update":
            if isinstance(params, dict):
                try:
                    self.acp.update(params.get("update"))
                except Exception as exc:  # a malformed update must not end the session
                    self.warn("update", f"a session/update could not be read: {_describe(exc)}")
                self.count_tokens()
            return False
        if method == "session/request_permission" and isinstance(params, dict):
            call = params.get("toolCall")
            if isinstance(call, dict):
                self.acp.tool_start(call)  # the start of calls reported only on completion
            return True
        if isinstance(method, str) and method.startswith("_"):
            return "id" in message  # vendor notifications are dropped; requests answered
        if method is None and "id" in message and "result" in message:
            sent = self.methods.get(message["id"])
            if sent is not None:
                self.results[sent] = message["result"]
        return True

    # -- tokens -----------------------------------------------------------------------

    def live_tokens(self) -> int:
        return max(self.acp.estimated_tokens, self.builder.transcript.usage.total)

    def count_tokens(self, *, final: bool = False) -> None:
        live_usage = self.acp.turn_usage or self.acp.usage_update
        if live_usage is not None and self.prompt_result is None:
            self.builder.set_usage(live_usage)
        on_tokens = self.control.on_tokens
        live = self.live_tokens()
        if on_tokens is None or live <= self.tokens_seen or (self.stop and not final):
            return
        self.tokens_seen = live
        try:
            verdict = on_tokens(live)
        except Exception as exc:
            self.warn("tokens", f"on_tokens raised {_describe(exc)}")
            return
        if verdict is not None and not final:
            self.stop = verdict
            self.limit_hit.set()

    # -- the conversation -------------------------------------------------------------

    async def converse(self, conn: Any) -> None:
        """initialize → session/new → session/prompt; never raises (but for cancellation)."""
        try:
            self.step = "initialize"
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=False,
                ),
                client_info=Implementation(name="axis-eval", version=__version__),
            )
            info = init.agent_info
            if info is not None:
                self.agent_info = {"name": info.name, "version": info.version}
            self.step = "session/new"
            session = await conn.new_session(
                cwd=self.inp.workspace, mcp_servers=acp_mcp_servers(self.inp.mcp_servers)
            )
            self.builder.transcript.session_id = session.session_id
            models = self._raw_result("session/new").get("models")
            if isinstance(models, dict) and isinstance(models.get("currentModelId"), str):
                self.session_model = models["currentModelId"]
            self.step = "session/prompt"
            await conn.prompt(
                session_id=session.session_id, prompt=[acp.text_block(self.inp.prompt)]
            )
            self.prompt_result = self._raw_result("session/prompt")
        except acp.RequestError as exc:
            detail = f": {json.dumps(exc.data, default=str)[:500]}" if exc.data else ""
            self.failure = f"ACP {self.step} failed: {exc}{detail}"
        except ValidationError as exc:
            raw = self.results.get(self.step)
            if self.step == "session/prompt" and isinstance(raw, dict):
                self.prompt_result = raw  # the agent answered; only the typed check failed
                self.warn("schema", f"the session/prompt result is off-schema: {exc}"[:300])
            else:
                self.failure = f"ACP {self.step}: the agent's answer is malformed: {exc}"[:500]
        except (ConnectionError, OSError):
            self.disconnected = True
        except Exception as exc:  # anything else the library raises ends the session
            self.failure = f"ACP {self.step} failed: {_describe(exc)}"

    def _raw_result(self, method: str) -> dict[str, Any]:
        raw = self.results.get(method)
        return raw if isinstance(raw, dict) else {}

    async def read_stderr(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(64 * 1024):
            self.stderr_bytes += len(chunk)
            self.stderr += chunk
            if len(self.stderr) > 2 * STDERR_CAP_BYTES:
                del self.stderr[:-STDERR_CAP_BYTES]

    async def supervise(self, proc: AgentProcess) -> None:
        """Talk to the agent until the prompt returns or the run must stop; then stop it."""
        assert proc.stdin is not None
        stderr_task = asyncio.ensure_future(self.read_stderr(proc.stderr))
        client = cast(acp.Client, AcpClient())  # implements the handlers it needs
        conn = acp.connect_to_agent(client, StdioTransport(proc.stdout, proc.stdin, self))
        talk = asyncio.ensure_future(self.converse(conn))
        exited = asyncio.ensure_future(proc.wait())
        cancelled = asyncio.ensure_future(self.control.cancel.wait())
        limited = asyncio.ensure_future(self.limit_hit.wait())
        limit_s = self.inp.time_limit_s
        timeout = limit_s if limit_s > 0 and math.isfinite(limit_s) else None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            done, _ = await asyncio.wait(
                {talk, exited, cancelled, limited},
                timeout=timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if exited in done and talk not in done:
                # The agent is gone: its last messages may still be in the pipe.
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                wait_s = _AFTER_EXIT_S if left is None else min(_AFTER_EXIT_S, left)
                done2, _ = await asyncio.wait(
                    {talk, cancelled, limited}, timeout=wait_s, return_when=asyncio.FIRST_COMPLETED
                )
                done |= done2
                if not done2:
                    self.disconnected = True
            if talk not in done and self.stop is None:
                if cancelled in done:
                    self.stop = ("cancelled", self.control.cancel_reason or "Run cancelled")
                elif exited not in done:
                    self.stop = ("timeout", time_limit_message(limit_s))
            if talk in done and not exited.done():
                proc.stdin.close()  # the prompt is answered: EOF, then a moment to exit
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exited), _EXIT_WAIT_S)
            await proc.stop(self.control.grace_s)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(stderr_task), _READER_LIMIT_S)
        finally:
            for task in (talk, exited, cancelled, limited, stderr_task):
                task.cancel()
            await asyncio.gather(
                talk, exited, cancelled, limited, stderr_task, return_exceptions=True
            )
            with contextlib.suppress(Exception):
                await conn.close()

    # -- the outcome ------------------------------------------------------------------

    def stderr_text(self) -> str:
        if self.stderr_bytes > STDERR_CAP_BYTES:
            self.warn(
                "stderr", f"stderr was {self.stderr_bytes} bytes; kept the last {STDERR_CAP_BYTES}"
            )
        return bytes(self.stderr[-STDERR_CAP_BYTES:]).decode("utf-8", "replace")

    def _usage(self) -> TokenUsage | None:
        result = self.prompt_result
        if result is not None:
            usage = prompt_usage({"usage": result.get("usage")})
            if usage is None and self.adapter.extract_usage is not None:
                try:
                    usage = self.adapter.extract_usage(result)
                except Exception as exc:
                    self.warn("extract_usage", f"extract_usage raised {_describe(exc)}")
                if usage is not None and not isinstance(usage, TokenUsage):
                    self.warn("extract_usage", "extract_usage did not return a TokenUsage")
                    usage = None
            if usage is None:
                usage = prompt_usage(result)
            if usage is not None:
                return usage
        return self.acp.turn_usage or self.acp.usage_update

    def _cost(self, usage: TokenUsage) -> None:
        if self.acp.cost_usd is not None:
            self.builder.set_cost(self.acp.cost_usd)
            return
        if usage.total == 0:
            return
        per_model = model_usage(self.prompt_result)
        if per_model and not self.inp.agent.model:
            costs = [prices.estimate_cost(model, part) for model, part in per_model]
            estimate = None if None in costs else round(sum(c for c in costs if c), 6)
        else:
            estimate = prices.estimate_cost(self.inp.agent.model or self.session_model, usage)
        if estimate is not None:
            self.builder.set_cost(estimate, estimated=True)

    def finish(self, exit_code: int | None, stderr: str, cli_version: str | None) -> AgentOutput:
        self.acp.finish()
        usage = self._usage()
        if usage is not None:
            self.builder.set_usage(usage)
            self._cost(usage)
        transcript = self.builder.finish()
        version = cli_version or self.agent_info.get("version")
        if version:
            transcript.agent_version = str(version)
        error, kind = self._error(stderr, exit_code, transcript)
        answered = self.prompt_result is not None or (
            self.failure is not None and not self.disconnected
        )
        if answered and self.stop is None:
            # As AXIS: the agent answered (a result or a JSON-RPC error) and was then told
            # to exit, so its own exit code says nothing; report the session's outcome.
            exit_code = 0 if error is None else 1
        self.count_tokens(final=True)
        result = transcript.result
        failed = error is not None or (result is None and exit_code != 0)
        return self.output(transcript, stderr, exit_code, result, error, kind, failed)

    def _error(
        self, stderr: str, exit_code: int | None, transcript: Transcript
    ) -> tuple[str | None, ErrorKind | None]:
        if self.stop is not None:
            return self.stop[1], self.stop[0]
        if self.failure is not None:
            tail = _stderr_tail(stderr)
            return self.failure + (f"\n{tail}" if tail and self.disconnected else ""), "agent"
        if self.prompt_result is None:
            what = f"during {self.step}" if self.step else ""
            if exit_code is not None and exit_code != 0:
                reason = _exit_message(exit_code)
            else:
                reason = "The agent closed the ACP connection"
            tail = _stderr_tail(stderr)
            return f"{reason} {what}".strip() + (f"\n{tail}" if tail else ""), "agent"
        stop_reason = self.prompt_result.get("stopReason")
        if stop_reason in STOP_REASON_ERRORS:
            return STOP_REASON_ERRORS[stop_reason], "agent"
        work = ("assistant", "thinking", "tool")
        if transcript.result is None and not any(e.type in work for e in transcript.entries):
            return "Agent produced no output", "agent"
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
    ) -> AgentOutput:
        warnings = list(self.warnings)
        warnings += [
            f"… and {n - _WARNINGS_SHOWN} more {key} warnings"
            for key, n in self.warning_counts.items()
            if n > _WARNINGS_SHOWN
        ]
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
            ended_at=transcript.ended_at or _now(),
            duration_ms=int((time.monotonic() - self.t0) * 1000),
            warnings=warnings,
        )

    def refused(self, kind: ErrorKind, message: str) -> AgentOutput:
        transcript = self.builder.finish()
        transcript.result = None
        return self.output(transcript, "", None, None, message, kind, True)


def _stderr_tail(stderr: str) -> str | None:
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    picked: list[str] = []
    size = 0
    for line in reversed(lines):
        if picked and size + len(line) + 1 > _ERROR_TAIL_CHARS:
            break
        picked.append(line[-_ERROR_TAIL_CHARS:])
        size += len(picked[-1]) + 1
    return "\n".join(reversed(picked)) or None


def _exit_message(code: int) -> str:
    if code < 0:
        try:
            return f"Agent process was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"Agent process was killed by signal {-code}"
    return f"Agent process exited with non-zero code {code}"


async def run_acp_session(
    adapter: AcpAdapter, inp: AdapterInput, control: RunControl
) -> AgentOutput:
    """Run the ACP agent once in ``inp.workspace``; never raises for the agent's faults."""
    run = _Session(adapter, inp, control)
    name = adapter.name
    try:
        try:
            argv = resolve_argv_prefix(adapter, inp)
            args = adapter.build_args(inp)
            if not isinstance(args, list | tuple) or not all(isinstance(a, str) for a in args):
                raise AdapterConfigError(f"{name}: build_args must return a list of strings")
            argv += list(args)
        except AdapterConfigError as exc:
            raise _Refused("spawn", exc.message) from exc
        except Exception as exc:
            raise _Refused("spawn", f"{name}: {_describe(exc)}") from exc
        if control.cancel.is_set():
            raise _Refused("cancelled", control.cancel_reason or "Run cancelled")
        if adapter.prepare is not None:
            try:
                adapter.prepare(inp)
            except Exception as exc:
                raise _Refused("setup", f"{name}: prepare raised {_describe(exc)}") from exc
        env = dict(inp.env)  # after prepare, which may add to it (as with the runner)
        if adapter.spawn_env is not None:
            try:
                extra = adapter.spawn_env(inp)
                env.update({str(k): str(v) for k, v in extra.items()})
            except Exception as exc:
                raise _Refused("setup", f"{name}: env raised {_describe(exc)}") from exc
        spec = ProcessSpec(argv, inp.workspace, env, control.marker, stdin_pipe=True)
        try:
            proc = await spawn(spec)
        except SpawnFailed as exc:
            where = " (is it installed and on PATH?)" if "not found" in str(exc) else ""
            raise _Refused("spawn", f"Could not start the {name} agent: {exc}{where}") from exc
        except (OSError, ValueError) as exc:
            raise _Refused("spawn", f"Could not start the {name} agent: {exc}") from exc
    except _Refused as refused:
        return run.refused(refused.kind, refused.message)
    try:
        await run.supervise(proc)
    finally:
        with contextlib.suppress(Exception):
            await proc.stop(control.grace_s)
    cli_version: str | None = None
    if adapter.version is not None:
        try:  # may run `<cli> --version` once (cached): not on the event loop
            cli_version = await asyncio.to_thread(adapter.version, inp)
        except Exception as exc:
            run.warn("version", f"{name}: could not read the CLI version: {_describe(exc)}")
    return run.finish(proc.returncode, run.stderr_text(), cli_version)
