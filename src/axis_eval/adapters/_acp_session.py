"""Talk to one ACP agent: JSON-RPC over its stdio, mapped into the transcript as it arrives.

:class:`AcpSession` is the :class:`~axis_eval.adapters.supervision.OutputReader` of an
:class:`~axis_eval.adapters.acp.AcpAdapter`. The supervisor starts the agent with stdin
kept open and stops it; the session only converses. The ``acp`` package (PyPI
``agent-client-protocol``) is the client: it correlates requests, validates the typed
handshake and prompt calls and routes the agent's own requests (permission, file reads and
writes) to :class:`AcpClient`, over :class:`StdioTransport`. The session sees every message
in both directions first: it records them all and maps ``session/update`` notifications, in
arrival order, into :class:`AcpTranscript`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any, cast

import acp
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from pydantic import ValidationError

from axis_eval._types import TokenUsage
from axis_eval._version import __version__
from axis_eval.adapters import prices
from axis_eval.adapters._acp_client import AcpClient, StdioTransport, acp_mcp_servers
from axis_eval.adapters._acp_transcript import AcpTranscript, model_usage, prompt_usage
from axis_eval.adapters.acp import AcpAdapter
from axis_eval.adapters.base import AdapterInput
from axis_eval.adapters.hooks import run_hook
from axis_eval.adapters.supervision import (
    NOT_JSON,
    Reading,
    RunNotes,
    describe,
    exit_message,
    stderr_tail,
)
from axis_eval.adapters.transcript_builder import TranscriptBuilder

__all__ = ["STOP_REASON_ERRORS", "AcpSession"]

STOP_REASON_ERRORS = {
    "cancelled": "Agent cancelled",
    "max_tokens": "Agent hit max tokens limit",
    "refusal": "Agent refused to continue",
    "max_turn_requests": "Agent exceeded max turn requests",
}
"""``session/prompt`` stop reasons that fail the run, with AXIS's messages."""


class AcpSession:
    """One ACP run's conversation: raw messages, the handshake's answers, the outcome."""

    converses = True

    def __init__(
        self, adapter: AcpAdapter, inp: AdapterInput, builder: TranscriptBuilder, notes: RunNotes
    ) -> None:
        self.adapter = adapter
        self.inp = inp
        self.builder = builder
        self.notes = notes
        self.acp = AcpTranscript(builder)
        self.raw_output: list[str] = []
        """Every message, one JSON line each: ``{"t": seconds, "dir": …, "msg": …}``."""
        self.t0 = time.monotonic()
        self.methods: dict[Any, str] = {}  # our request ids → method
        self.results: dict[str, Any] = {}  # method → raw result
        self.agent_info: dict[str, Any] = {}
        self.step = "initialize"
        self.failure: str | None = None
        self.disconnected = False
        self.prompt_result: dict[str, Any] | None = None
        self.session_model: str | None = None
        self._conn: Any = None

    def stdin_data(self) -> bytes | None:
        return None  # the prompt goes in session/prompt

    def spawn_env(self) -> dict[str, str]:
        if self.adapter.spawn_env is None:
            return {}
        return {str(k): str(v) for k, v in self.adapter.spawn_env(self.inp).items()}

    # -- messages (the transport's MessageSink) ----------------------------------------

    def warn(self, key: str, message: str) -> None:
        """The transport's warnings (``key``: what about, e.g. ``stdout``), counted past
        the cap as ``… and N more stdout warnings``."""
        self.notes.warn(f"{key} warnings", message)

    def record(self, direction: str, message: dict[str, Any]) -> None:
        line = {"t": round(time.monotonic() - self.t0, 3), "dir": direction, "msg": message}
        self.raw_output.append(json.dumps(line, ensure_ascii=False, default=str))
        if direction == "client->agent" and "method" in message and "id" in message:
            self.methods[message["id"]] = str(message["method"])

    def non_json(self, text: str) -> None:
        line = {"t": round(time.monotonic() - self.t0, 3), "dir": "agent->client", "text": text}
        self.raw_output.append(json.dumps(line, ensure_ascii=False))
        self.notes.warn(
            NOT_JSON, f"the agent printed a stdout line that is not JSON-RPC: {text[:200]}"
        )

    def incoming(self, message: dict[str, Any]) -> bool:
        """Record and map one message from the agent; False when the SDK need not see it."""
        self.record("agent->client", message)
        method = message.get("method")
        params = message.get("params")
        if method == "session/update":
            if isinstance(params, dict):
                self._map("session/update", self.acp.update, params.get("update"))
                self._output_grew()
            return False
        if method == "session/request_permission" and isinstance(params, dict):
            call = params.get("toolCall")
            if isinstance(call, dict):  # the start of calls reported only on completion
                self._map("session/request_permission", self.acp.tool_start, call)
            return "id" in message  # a request the client answers (no id: nothing to answer)
        if method is not None and "id" not in message:
            # Other notifications carry nothing the client acts on (vendor ones, unknown
            # methods): the acp package would only log a traceback for each.
            return False
        rid = message.get("id")
        if method is None and isinstance(rid, int | str) and "result" in message:
            sent = self.methods.get(rid)  # (an id that is a list or an object is not ours)
            if sent is not None:
                self.results[sent] = message["result"]
        return True

    def _map(self, what: str, apply: Callable[[Any], None], value: Any) -> None:
        """Map one message into the transcript; one that cannot be read (a plan whose
        entries are not a list …) is a warning, never the end of the session."""
        try:
            apply(value)
        except Exception as exc:
            self.notes.warn("update warnings", f"a {what} could not be read: {describe(exc)}")

    def _output_grew(self) -> None:
        live_usage = self.acp.turn_usage or self.acp.usage_update
        if live_usage is not None and self.prompt_result is None:
            self.builder.set_usage(live_usage)
        self.notes.output_grew()

    def live_tokens(self) -> int:
        return max(self.acp.estimated_tokens, self.builder.transcript.usage.total)

    # -- the conversation -------------------------------------------------------------

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        """initialize → session/new → session/prompt; never raises (but for cancellation)."""
        assert stdin is not None, "an ACP agent is started with stdin kept open"
        roots = (self.inp.workspace, self.inp.home, self.inp.env.get("TMPDIR", ""))
        client = cast(acp.Client, AcpClient(roots))  # implements the handlers it needs
        conn: Any = acp.connect_to_agent(client, StdioTransport(stdout, stdin, self))
        self._conn = conn
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
                self.notes.warn(
                    "schema warnings", f"the session/prompt result is off-schema: {exc}"[:300]
                )
            else:
                self.failure = f"ACP {self.step}: the agent's answer is malformed: {exc}"[:500]
        except (ConnectionError, OSError):
            self.disconnected = True
        except Exception as exc:  # anything else the library raises ends the session
            self.failure = f"ACP {self.step} failed: {describe(exc)}"

    def _raw_result(self, method: str) -> dict[str, Any]:
        raw = self.results.get(method)
        return raw if isinstance(raw, dict) else {}

    async def close(self) -> None:
        """Close the connection (kept open until the agent was stopped, so the messages it
        sends after its answer are still recorded)."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()

    # -- the outcome ------------------------------------------------------------------

    async def _usage(self) -> TokenUsage | None:
        result = self.prompt_result
        if result is not None:
            usage = prompt_usage({"usage": result.get("usage")})
            if usage is None and self.adapter.extract_usage is not None:
                try:
                    usage = await run_hook(self.adapter.extract_usage, result)
                except Exception as exc:
                    self.notes.warn(
                        "extract_usage warnings", f"extract_usage raised {describe(exc)}"
                    )
                if usage is not None and not isinstance(usage, TokenUsage):
                    self.notes.warn(
                        "extract_usage warnings", "extract_usage did not return a TokenUsage"
                    )
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

    async def _cli_version(self) -> str | None:
        if self.adapter.version is None:
            return None
        try:  # may run `<cli> --version` once (cached): not on the event loop
            return await asyncio.to_thread(self.adapter.version, self.inp)
        except Exception as exc:
            name = self.adapter.name
            self.notes.warn(
                "version warnings", f"{name}: could not read the CLI version: {describe(exc)}"
            )
            return None

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        cli_version = await self._cli_version()
        self.acp.finish()
        usage = await self._usage()
        if usage is not None:
            self.builder.set_usage(usage)
            self._cost(usage)
        transcript = self.builder.finish()
        version = cli_version or self.agent_info.get("version")
        if version:
            transcript.agent_version = str(version)
        answered = self.prompt_result is not None or (
            self.failure is not None and not self.disconnected
        )
        error = None if stopped else self._error(exit_code, stderr)
        return Reading(error, answered=answered)

    def _error(self, exit_code: int | None, stderr: str) -> str | None:
        """What went wrong in the conversation (the supervisor decides the rest)."""
        if self.failure is not None:
            tail = stderr_tail(stderr)
            return self.failure + (f"\n{tail}" if tail and self.disconnected else "")
        if self.prompt_result is None:
            if exit_code is not None and exit_code != 0:
                reason = exit_message(exit_code)
            else:
                reason = "The agent closed the ACP connection"
            tail = stderr_tail(stderr)
            return f"{reason} during {self.step}" + (f"\n{tail}" if tail else "")
        stop_reason = self.prompt_result.get("stopReason")
        return STOP_REASON_ERRORS.get(stop_reason) if isinstance(stop_reason, str) else None
