"""AXIS transcript entries (``{type, timestamp, content}``) recorded in our transcript.

A JavaScript adapter pushes AXIS's entries onto ``ctx.transcript``; their ``content`` is the
agent's own payload. The fields are read as AXIS's transcript normalisation reads them (first
match wins): a tool's name from ``tool_name``, ``name``; its input from ``parameters``,
``input``, ``arguments``, ``command``, ``query``; its id from ``tool_id``, ``id``,
``tool_use_id``; text from nested ``message.content`` blocks, a ``content`` string, ``text``.
"""

from __future__ import annotations

import math
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters.transcript_builder import TranscriptBuilder

__all__ = ["record_entry", "usage_from"]

_TYPE_TOOLS = {
    "command_execution": "shell",
    "mcp_tool_calls": "mcp",
    "web_search": "web_search",
    "file_change": "file_change",
}


def _first_str(content: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = content.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _tool_id(content: dict[str, Any]) -> str | None:
    for key in ("tool_id", "id", "tool_use_id", "toolCallId"):
        value = content.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def _tool_name(content: dict[str, Any]) -> str | None:
    name = _first_str(content, "tool_name", "name")
    if name is None and isinstance(content.get("type"), str):
        name = _TYPE_TOOLS.get(content["type"])
    return name


def _tool_input(content: dict[str, Any]) -> Any:
    for key in ("parameters", "input", "arguments"):
        if key in content and content[key] is not None:
            return content[key]
    for key in ("command", "query"):
        if isinstance(content.get(key), str) and content[key]:
            return {key: content[key]}
    return None


def _blocks(content: dict[str, Any]) -> list[Any] | None:
    message = content.get("message")
    inner = message.get("content") if isinstance(message, dict) else None
    if isinstance(inner, list):
        return inner
    if isinstance(content.get("content"), list):
        return list(content["content"])
    return None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, dict):
        return None
    return _first_str(content, "text", "content", "message", "result")


def _output(content: dict[str, Any]) -> Any:
    for key in ("output", "content", "aggregated_output", "text", "result"):
        if key in content and content[key] is not None:
            value = content[key]
            if isinstance(value, list):  # content blocks: their text parts
                parts = [b.get("text") for b in value if isinstance(b, dict)]
                texts = [p for p in parts if isinstance(p, str)]
                return " | ".join(texts) if texts else value
            return value
    return None


def _is_error(content: dict[str, Any]) -> bool:
    return content.get("is_error") is True or content.get("status") in ("failed", "error")


def _record_blocks(builder: TranscriptBuilder, blocks: list[Any], user: bool) -> None:
    for block in blocks:
        if isinstance(block, str):
            (builder.user if user else builder.assistant)(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            (builder.user if user else builder.assistant)(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            builder.thinking(block["thinking"])
        elif kind == "tool_use":
            builder.tool_call(
                _tool_name(block) or "unknown", block.get("input"), id=_tool_id(block)
            )
        elif kind == "tool_result":
            builder.tool_result(_tool_id(block), _output(block), is_error=_is_error(block))


def record_entry(builder: TranscriptBuilder, entry: Any) -> bool:
    """Record one AXIS entry; False when its type is unknown (kept as a system entry)."""
    if not isinstance(entry, dict):
        builder.system(context_text(entry))
        return False
    kind = entry.get("type")
    raw = entry.get("content")
    content = raw if isinstance(raw, dict) else {}
    if kind in ("assistant", "user"):
        user = kind == "user"
        blocks = _blocks(content)
        if blocks is not None:
            _record_blocks(builder, blocks, user)
        elif not user and _tool_name(content) and _tool_input(content) is not None:
            kind = "tool_use"  # as AXIS: an assistant entry naming a tool is a tool call
        else:
            text = _text(raw)
            if text:
                (builder.user if user else builder.assistant)(text)
            return True
        if kind != "tool_use":
            return True
    if kind == "tool_use":
        builder.tool_call(
            _tool_name(content) or "unknown",
            _tool_input(content),
            id=_tool_id(content),
            kind=content.get("kind") if isinstance(content.get("kind"), str) else None,
        )
    elif kind == "tool_result":
        builder.tool_result(
            _tool_id(content),
            _output(content),
            is_error=_is_error(content),
            name=_tool_name(content),
        )
    elif kind == "error":
        err = content.get("error")
        message = (
            err
            if isinstance(err, str) and err
            else _first_str(content, "message")
            or (err.get("message") if isinstance(err, dict) else None)
            or _text(raw)
            or context_text(raw)
        )
        builder.error(str(message))
    elif kind == "system":
        builder.system(_text(raw) or _first_str(content, "error") or context_text(raw))
    else:
        builder.system(context_text(entry))
        return False
    return True


def usage_from(value: Any) -> TokenUsage | None:
    """AXIS's ``tokenUsage`` (``{input, output, cacheReadInput}``; ACP's ``inputTokens``
    naming too) as ours, or None when it is not one."""
    if not isinstance(value, dict):
        return None

    def count(*names: str) -> int:
        for name in names:
            got = value.get(name)
            if isinstance(got, int | float) and not isinstance(got, bool) and got >= 0:
                return int(got) if math.isfinite(got) else 0
        return 0

    return TokenUsage(
        input=count("input", "inputTokens"),
        output=count("output", "outputTokens"),
        cache_read_input=count("cacheReadInput", "cachedReadTokens", "cacheReadInputTokens"),
        cache_write_input=count("cacheWriteInput", "cacheWriteInputTokens"),
    )
