"""OpenAI Responses API: ``POST …/responses`` (JSON or SSE)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from axis_model_server.codex_tools import deferred_namespaces, nested_tools
from axis_model_server.normalize import (
    DEFAULT_NAMESPACE,
    Entry,
    ModelRequest,
    OfferedTool,
    Role,
    qualified_name,
)
from axis_model_server.script import Reply
from axis_model_server.wire._body import (
    add_content,
    as_dict,
    as_list,
    as_str,
    call_args,
    flatten_text,
    int_or_none,
    openai_output_schema,
)
from axis_model_server.wire._sse import frame, new_id, pieces

__all__ = ["parse", "response", "stream", "usage"]

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
}


def parse(body: dict[str, Any]) -> ModelRequest:
    """A Responses request."""
    req = ModelRequest(
        "openai-responses", model=as_str(body.get("model")), stream=bool(body.get("stream"))
    )
    req.add_text("system", body.get("instructions"))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in as_list(items):
        item = as_dict(item)
        kind = str(item.get("type") or ("message" if "role" in item else ""))
        if kind == "message":
            role = _ROLES.get(as_str(item.get("role")) or "")
            if role is not None:
                add_content(req, role, item.get("content"))
        elif kind == "additional_tools":
            # Codex's code-mode models get their tools in the input, not in ``tools``.
            for tool in _flatten_tools(as_list(item.get("tools"))):
                req.add_tool(_offered(tool))
        elif kind in ("function_call", "custom_tool_call"):
            name = qualified_name(as_str(item.get("namespace")), str(item.get("name") or ""))
            if kind == "function_call":
                req.add_call(name, call_args(item.get("arguments")))
            else:  # freeform input text
                req.add_call(name, {"input": item.get("input", "")})
        elif kind == "local_shell_call":
            action = as_dict(item.get("action"))
            req.add_call("local_shell", {"command": action.get("command")})
        elif kind.endswith("_call_output"):
            req.entries.append(Entry("tool", text=flatten_text(item.get("output"))))
        elif kind.endswith("_call"):
            req.add_call(item.get("name") or kind, {k: v for k, v in item.items() if k == "action"})
    for tool in _flatten_tools(as_list(body.get("tools"))):
        req.add_tool(_offered(tool))
    req.json_schema = openai_output_schema(as_dict(body.get("text")).get("format"))
    req.max_tokens = int_or_none(body.get("max_output_tokens"))
    req.deferred = deferred_namespaces(
        req.system + [e.text for e in req.entries if e.role == "system" and e.text]
    )
    for offered in req.tools:
        declared = nested_tools(offered.description) if offered.kind == "custom" else []
        if declared:
            req.code_tool, req.nested = offered, declared
            break
    return req


def _offered(tool: dict[str, Any]) -> OfferedTool:
    kind = str(tool.get("type") or "function")
    params = tool.get("parameters")
    namespace = as_str(tool.get("namespace"))
    return OfferedTool(
        name=as_str(tool.get("name")) or kind,
        kind=kind,
        description=as_str(tool.get("description")) or "",
        schema=params if isinstance(params, dict) else None,
        namespace=None if namespace == DEFAULT_NAMESPACE else namespace,
    )


def _flatten_tools(tools: list[Any], namespace: str | None = None) -> list[dict[str, Any]]:
    """Responses tools with ``namespace`` tools opened up; each inner tool is tagged with
    its namespace's name."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        tool = as_dict(tool)
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            inner = as_str(tool.get("name"))
            out.extend(_flatten_tools(tool["tools"], inner or namespace))
        elif tool:
            out.append({**tool, "namespace": namespace} if namespace else tool)
    return out


def usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.total_tokens,
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


_STREAMED_FIELDS = {
    "function_call": ("arguments", "response.function_call_arguments"),
    "custom_tool_call": ("input", "response.custom_tool_call_input"),
}
"""The call items whose text field streams in deltas: the field, and the events' prefix."""


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
        elif kind in _STREAMED_FIELDS:
            key, prefix = _STREAMED_FIELDS[kind]
            yield event(
                "response.output_item.added",
                output_index=index,
                item=dict(item, **{key: ""}, status="in_progress"),
            )
            for piece in pieces(item[key]):
                yield event(f"{prefix}.delta", **where, delta=piece)
            yield event(f"{prefix}.done", **where, **{key: item[key]})
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=final)
