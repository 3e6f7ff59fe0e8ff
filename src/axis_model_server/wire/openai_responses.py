"""OpenAI Responses API: ``POST …/responses`` (JSON or SSE)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from axis_model_server.script import Reply
from axis_model_server.wire._sse import frame, new_id, pieces


def usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.text:
        items.append(
            {
                "type": "message",
                "id": new_id("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for call in reply.calls:
        call_id = "call_" + call.call_id
        if call.kind == "custom":
            item = {
                "type": "custom_tool_call",
                "id": "ctc_" + call.call_id,
                "call_id": call_id,
                "name": call.name,
                "input": call.input_text,
                "status": "completed",
            }
            items.append(_with_namespace(item, call.namespace))
        elif call.kind == "local_shell":
            items.append(
                {
                    "type": "local_shell_call",
                    "id": "lsh_" + call.call_id,
                    "call_id": call_id,
                    "status": "completed",
                    "action": {"type": "exec", "command": call.args.get("command"), "env": {}},
                }
            )
        else:
            item = {
                "type": "function_call",
                "id": "fc_" + call.call_id,
                "call_id": call_id,
                "name": call.name,
                "arguments": json.dumps(call.args, ensure_ascii=False),
                "status": "completed",
            }
            items.append(_with_namespace(item, call.namespace))
    return items


def _with_namespace(item: dict[str, Any], namespace: str | None) -> dict[str, Any]:
    """A namespaced tool's call names its namespace next to the bare name (Codex runs an
    MCP tool only when the call says ``"namespace": "mcp__<server>"``)."""
    return {**item, "namespace": namespace} if namespace else item


def _response(model: str, items: list[dict[str, Any]], reply: Reply, rid: str) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "output": items,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage(reply),
    }


def response(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    return _response(model, _items(reply), reply, new_id("resp_"))


def stream(reply: Reply, model: str) -> Iterator[bytes]:
    """The SSE frames of a streaming response."""
    items = _items(reply)
    final = _response(model, items, reply, new_id("resp_"))
    pending = dict(final, status="in_progress", output=[], usage=None)
    sequence = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        sequence += 1
        return frame(data, kind)

    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    for index, item in enumerate(items):
        kind = item["type"]
        where = {"item_id": item["id"], "output_index": index}
        if kind == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, status="in_progress", content=[]),
            )
            yield event("response.content_part.added", **where, content_index=0, part=part)
            for piece in pieces(text):
                yield event("response.output_text.delta", **where, content_index=0, delta=piece)
            yield event("response.output_text.done", **where, content_index=0, text=text)
            yield event(
                "response.content_part.done", **where, content_index=0, part=item["content"][0]
            )
        elif kind == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, arguments="", status="in_progress"),
            )
            for piece in pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **where, delta=piece)
            yield event(
                "response.function_call_arguments.done", **where, arguments=item["arguments"]
            )
        elif kind == "custom_tool_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, input="", status="in_progress"),
            )
            for piece in pieces(item["input"]):
                yield event("response.custom_tool_call_input.delta", **where, delta=piece)
            yield event("response.custom_tool_call_input.done", **where, input=item["input"])
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=final)
