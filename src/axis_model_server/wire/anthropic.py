"""Anthropic Messages API: ``POST /v1/messages`` (JSON or SSE) and ``count_tokens``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from axis_model_server.normalize import Entry, ModelRequest
from axis_model_server.script import Reply
from axis_model_server.wire._body import (
    add_content,
    as_dict,
    as_list,
    as_str,
    declared_tool,
    flatten_text,
    int_or_none,
)
from axis_model_server.wire._sse import frame, new_id, pieces

__all__ = ["count_tokens", "message", "parse", "stream", "usage"]


def parse(body: dict[str, Any]) -> ModelRequest:
    """A Messages request (``/v1/messages``, also ``count_tokens``)."""
    req = ModelRequest(
        "anthropic", model=as_str(body.get("model")), stream=bool(body.get("stream"))
    )
    add_content(req, "system", body.get("system"))
    for message in as_list(body.get("messages")):
        message = as_dict(message)
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            req.add_text("system", flatten_text(content))
            continue
        if role not in ("user", "assistant"):
            continue
        if isinstance(content, str):
            req.add_text(role, content)
            continue
        for block in as_list(content):
            block = as_dict(block)
            kind = block.get("type")
            if kind == "text":
                req.add_text(role, block.get("text"))
            elif kind in ("tool_use", "server_tool_use") and role == "assistant":
                req.add_call(block.get("name"), block.get("input"))
            elif kind == "tool_result":
                req.entries.append(Entry("tool", text=flatten_text(block.get("content"))))
    for tool in as_list(body.get("tools")):
        tool = as_dict(tool)
        schema = tool.get("input_schema")
        declared = tool.get("type")
        # Server tools (web_search, bash_20250124 ...) come with a type and no schema.
        plain = isinstance(schema, dict) or declared in (None, "custom")
        req.add_tool(declared_tool(tool, schema, kind="function" if plain else str(declared)))
    output = as_dict(body.get("output_format")) or as_dict(
        as_dict(body.get("output_config")).get("format")
    )
    if output.get("type") == "json_schema":
        req.json_schema = as_dict(output.get("schema"))
    req.max_tokens = int_or_none(body.get("max_tokens"))
    return req


def usage(reply: Reply, *, output_tokens: int | None = None) -> dict[str, int]:
    return {
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens if output_tokens is None else output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for call in reply.calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_" + call.call_id,
                "name": call.full_name,
                "input": call.args,
            }
        )
    return blocks


def _stop_reason(reply: Reply) -> str:
    return "tool_use" if reply.calls else "end_turn"


def message(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(reply),
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": usage(reply),
    }


def stream(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE frames of a streaming response."""
    start: dict[str, Any] = {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage(reply, output_tokens=0),
    }
    yield frame({"type": "message_start", "message": start}, "message_start")
    yield frame({"type": "ping"}, "ping")
    for index, block in enumerate(_blocks(reply)):
        opened: dict[str, Any]
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            arguments = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(arguments)]
        yield frame(
            {"type": "content_block_start", "index": index, "content_block": opened},
            "content_block_start",
        )
        for delta in deltas:
            yield frame(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield frame({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield frame(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
            "usage": usage(reply),
        },
        "message_delta",
    )
    yield frame({"type": "message_stop"}, "message_stop")


def count_tokens(reply: Reply) -> dict[str, Any]:
    """The ``/v1/messages/count_tokens`` response body."""
    return {"input_tokens": reply.input_tokens}
