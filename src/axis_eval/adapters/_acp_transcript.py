"""Map ACP ``session/update`` notifications (raw JSON) into the normalized transcript.

Updates are read from the raw messages, in the order they arrived, so an update kind the
installed ``acp`` package does not know yet is simply skipped instead of failing
validation. Only this module decides how ACP events look in a :class:`Transcript`.
"""

from __future__ import annotations

import math
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_bytes, context_text
from axis_eval.adapters._scrub import MAX_COUNT, finite_cost
from axis_eval.adapters.base import CHARS_PER_TOKEN
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.transcript.models import ToolCall

__all__ = ["AcpTranscript", "content_text", "model_usage", "prompt_usage"]

_CLOSED = ("completed", "failed")


def _block_text(block: Any) -> str:
    """Text of one ACP content block (text, image, resource …)."""
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "resource_link":
        return f"[resource: {block.get('uri', '')}]"
    if kind == "resource":
        resource = block.get("resource")
        if isinstance(resource, dict):
            if isinstance(resource.get("text"), str):
                return str(resource["text"])
            return f"[resource: {resource.get('uri', '')}]"
        return "[resource]"
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""


def content_text(content: Any) -> str:
    """Text of a tool call's ``content`` list: text joined by newlines, diffs and
    terminals as ``[diff: <path>]`` and ``[terminal: <id>]``."""
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for item in content:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "content":
            text = _block_text(item.get("content"))
        elif kind == "diff":
            text = f"[diff: {item.get('path', '')}]"
        elif kind == "terminal":
            text = f"[terminal: {item.get('terminalId', '')}]"
        else:
            text = _block_text(item)
        if text:
            parts.append(text)
    return "\n".join(parts)


def _int(value: Any) -> int:
    """A token count: a positive int up to :data:`MAX_COUNT`, anything else 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 < value <= MAX_COUNT else 0


def prompt_usage(result: Any) -> TokenUsage | None:
    """Usage from a ``session/prompt`` result: ``usage`` (ACP), else Gemini's
    ``_meta.quota.token_count``; None when it has neither."""
    if not isinstance(result, dict):
        return None
    usage = result.get("usage")
    if isinstance(usage, dict) and ("inputTokens" in usage or "outputTokens" in usage):
        return TokenUsage(
            input=_int(usage.get("inputTokens")),
            output=_int(usage.get("outputTokens")),
            cache_read_input=_int(usage.get("cachedReadTokens")),
            cache_write_input=_int(usage.get("cachedWriteTokens")),
        )
    meta = result.get("_meta")
    quota = meta.get("quota") if isinstance(meta, dict) else None
    count = quota.get("token_count") if isinstance(quota, dict) else None
    if isinstance(count, dict) and ("input_tokens" in count or "output_tokens" in count):
        return TokenUsage(
            input=_int(count.get("input_tokens")), output=_int(count.get("output_tokens"))
        )
    return None


def model_usage(result: dict[str, Any] | None) -> list[tuple[str, TokenUsage]]:
    """Gemini's per-model usage: ``_meta.quota.model_usage[{model, token_count}]``."""
    meta = result.get("_meta") if isinstance(result, dict) else None
    quota = meta.get("quota") if isinstance(meta, dict) else None
    items = quota.get("model_usage") if isinstance(quota, dict) else None
    out: list[tuple[str, TokenUsage]] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("model"), str):
            usage = prompt_usage({"_meta": {"quota": {"token_count": item.get("token_count")}}})
            if usage is not None and usage.total:
                out.append((item["model"], usage))
    return out


def _meaningful(value: Any) -> bool:
    return value is not None and value != {} and value != [] and value != ""


class AcpTranscript:
    """The transcript of one ACP session, fed with raw updates as they arrive."""

    def __init__(self, builder: TranscriptBuilder) -> None:
        self.builder = builder
        self.calls: dict[str, ToolCall] = {}
        self.closed: set[str] = set()
        self.usage_update: TokenUsage | None = None
        """The last ``usage_update`` (``used`` as input tokens)."""
        self.cost_usd: float | None = None
        """The last cost a ``usage_update`` reported, in US dollars."""
        self.turn_usage: TokenUsage | None = None
        """The sum of per-model-call usage in updates' ``_meta.usage`` (Qwen Code)."""
        self.chars = 0
        self._pending_kind: str | None = None
        self._pending_id: Any = None
        self._pending: list[str] = []
        self._raw_outputs: dict[str, Any] = {}

    # -- text -------------------------------------------------------------------------

    @property
    def estimated_tokens(self) -> int:
        """``ceil(chars / 5)`` over message, thought and tool-output text."""
        return math.ceil(self.chars / CHARS_PER_TOKEN)

    def flush(self) -> None:
        """Turn buffered message or thought chunks into one entry."""
        if not self._pending:
            self._pending_kind = None
            return
        text = "".join(self._pending)
        kind = self._pending_kind
        self._pending = []
        self._pending_kind = None
        if kind == "thinking":
            self.builder.thinking(text)
        elif text:
            self.builder.assistant(text)

    def _chunk(self, kind: str, update: dict[str, Any]) -> None:
        text = _block_text(update.get("content"))
        message_id = update.get("messageId")
        if self._pending_kind != kind or (
            message_id is not None
            and self._pending_id is not None
            and message_id != self._pending_id
        ):
            self.flush()
        self._pending_kind = kind
        self._pending_id = message_id
        if text:
            self._pending.append(text)
            self.chars += len(text)

    # -- tool calls -------------------------------------------------------------------

    def tool_start(self, call: dict[str, Any]) -> None:
        """A ``tool_call``, or the tool call of a permission request (its synthetic start)."""
        tool_id = call.get("toolCallId")
        if not isinstance(tool_id, str) or not tool_id:
            return
        if tool_id in self.calls:
            self.tool_update(call)
            return
        self.flush()
        title = call.get("title")
        name = title if isinstance(title, str) and title else "tool"
        kind = call.get("kind") if isinstance(call.get("kind"), str) else None
        raw_input = call.get("rawInput")
        tool_input = raw_input if _meaningful(raw_input) else None
        self.builder.tool_call(name, tool_input, id=tool_id, kind=kind)
        entry = self.builder.transcript.entries[-1]
        assert entry.tool is not None
        self.calls[tool_id] = entry.tool
        if tool_input is None:  # no rawInput (Gemini): what the call shows instead
            shown = {"title": title} if isinstance(title, str) and title else {}
            described = content_text(call.get("content"))
            if described:
                shown["description"] = described
            if shown:
                self._set_input(entry.tool, shown)
        if call.get("rawOutput") is not None:
            self._raw_outputs[tool_id] = call.get("rawOutput")
        if call.get("status") in _CLOSED:
            self._close(tool_id, call)

    def tool_update(self, update: dict[str, Any]) -> None:
        """A ``tool_call_update``: fill in input and title; close on completed/failed."""
        tool_id = update.get("toolCallId")
        if not isinstance(tool_id, str) or not tool_id:
            return
        call = self.calls.get(tool_id)
        if call is None:
            self.tool_start(update)  # an agent that reports only completion: start now
            return
        raw_input = update.get("rawInput")
        if _meaningful(raw_input):
            self._set_input(call, raw_input)
        title = update.get("title")
        if isinstance(title, str) and title:
            call.name = title
        if isinstance(update.get("kind"), str):
            call.kind = update["kind"]
        if update.get("rawOutput") is not None:
            self._raw_outputs[tool_id] = update.get("rawOutput")
        if update.get("status") in _CLOSED and tool_id not in self.closed:
            self._close(tool_id, update)

    def _set_input(self, call: ToolCall, value: Any) -> None:
        call.input = value
        call.input_bytes = context_bytes(value)  # as the builder measures it (JSON.stringify)

    def _close(self, tool_id: str, update: dict[str, Any]) -> None:
        raw = self._raw_outputs.get(tool_id)
        output = raw if isinstance(raw, str) and raw else content_text(update.get("content"))
        if not output and raw is not None and not isinstance(raw, str):
            output = context_text(raw)
        self.chars += len(output)
        self.closed.add(tool_id)
        self.builder.tool_result(tool_id, output, is_error=update.get("status") == "failed")

    # -- everything else --------------------------------------------------------------

    def _plan(self, update: dict[str, Any]) -> None:
        lines = ["plan:"]
        for item in update.get("entries") or []:
            if isinstance(item, dict):
                lines.append(f"- [{item.get('status', '')}] {item.get('content', '')}")
        self.flush()
        self.builder.system("\n".join(lines))

    def _usage(self, update: dict[str, Any]) -> None:
        used = update.get("used")
        if isinstance(used, int) and not isinstance(used, bool):
            self.usage_update = TokenUsage(input=_int(used))
        cost = update.get("cost")
        if isinstance(cost, dict) and cost.get("currency") in (None, "USD", "usd"):
            amount = finite_cost(cost.get("amount"))  # not NaN, 1e400 or 10**4000
            if amount is not None:
                self.cost_usd = amount

    def update(self, update: Any) -> None:
        """Apply one ``session/update`` payload (its ``update`` object)."""
        if not isinstance(update, dict):
            return
        meta = update.get("_meta")
        if isinstance(meta, dict) and isinstance(meta.get("usage"), dict):
            turn = prompt_usage({"usage": meta["usage"]})
            if turn is not None:
                self.turn_usage = turn if self.turn_usage is None else self.turn_usage + turn
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self._chunk("assistant", update)
        elif kind == "agent_thought_chunk":
            self._chunk("thinking", update)
        elif kind == "tool_call":
            self.tool_start(update)
        elif kind == "tool_call_update":
            self.tool_update(update)
        elif kind == "plan":
            self._plan(update)
        elif kind == "usage_update":
            self._usage(update)
        # user_message_chunk (replays), available_commands_update, current_mode_update,
        # config_option_update, session_info_update and vendor updates carry no work.

    def finish(self) -> None:
        """Flush buffered text; calls the run ended before completing stay open."""
        self.flush()
