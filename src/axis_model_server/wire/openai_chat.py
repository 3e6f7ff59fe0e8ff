"""OpenAI Chat Completions API: ``POST …/chat/completions`` (JSON or SSE)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from axis_model_server.normalize import Entry, ModelRequest
from axis_model_server.script import Reply
from axis_model_server.tools import EmittedCall
from axis_model_server.wire._body import (
    add_content,
    as_dict,
    as_list,
    as_str,
    call_args,
    declared_tool,
    flatten_text,
    int_or_none,
    openai_output_schema,
)
from axis_model_server.wire._sse import frame, new_id, pieces
from axis_model_server.wire._usage import token_counts

__all__ = ["completion", "parse", "stream", "usage"]


def parse(body: dict[str, Any]) -> ModelRequest:
    """A Chat Completions request."""
    req = ModelRequest(
        "openai-chat", model=as_str(body.get("model")), stream=bool(body.get("stream"))
    )
    for message in as_list(body.get("messages")):
        message = as_dict(message)
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            req.add_text("system", flatten_text(content))
        elif role == "user":
            add_content(req, "user", content)
        elif role == "assistant":
            add_content(req, "assistant", content)
            for call in as_list(message.get("tool_calls")):
                call = as_dict(call)
                if call.get("type") == "custom":
                    custom = as_dict(call.get("custom"))
                    req.add_call(custom.get("name"), {"input": custom.get("input", "")})
                else:
                    fn = as_dict(call.get("function"))
                    req.add_call(fn.get("name"), call_args(fn.get("arguments")))
            legacy = as_dict(message.get("function_call"))  # before tool_calls existed
            if legacy:
                req.add_call(legacy.get("name"), call_args(legacy.get("arguments")))
        elif role in ("tool", "function"):
            req.entries.append(Entry("tool", text=flatten_text(content)))
    for tool in as_list(body.get("tools")):
        tool = as_dict(tool)
        if tool.get("type") == "custom":
            req.add_tool(declared_tool(as_dict(tool.get("custom")), None, kind="custom"))
        else:
            fn = as_dict(tool.get("function"))
            req.add_tool(declared_tool(fn, fn.get("parameters")))
    for fn in as_list(body.get("functions")):
        fn = as_dict(fn)
        req.add_tool(declared_tool(fn, fn.get("parameters")))
    req.json_schema = openai_output_schema(body.get("response_format"))
    req.max_tokens = int_or_none(body.get("max_completion_tokens")) or int_or_none(
        body.get("max_tokens")
    )
    return req


def usage(reply: Reply) -> dict[str, Any]:
    return {
        **token_counts(reply, "prompt_tokens", "completion_tokens", "total_tokens"),
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _finish(reply: Reply) -> str:
    return "tool_calls" if reply.calls else "stop"


def _call(call: EmittedCall) -> dict[str, Any]:
    if call.kind == "custom":
        return {
            "id": "call_" + call.call_id,
            "type": "custom",
            "custom": {"name": call.full_name, "input": call.input_text},
        }
    return {
        "id": "call_" + call.call_id,
        "type": "function",
        "function": {
            "name": call.full_name,
            "arguments": json.dumps(call.args, ensure_ascii=False),
        },
    }


def completion(reply: Reply, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [_call(c) for c in reply.calls]
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": usage(reply),
    }


def stream(reply: Reply, model: str, *, include_usage: bool) -> Iterator[bytes]:
    """The SSE chunks of a streaming response, ending with ``data: [DONE]``.

    With ``stream_options.include_usage`` the usage comes in an extra last chunk with no
    choices (as OpenAI sends it); otherwise it rides on the chunk with the finish reason.
    """
    base = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return frame({**base, "choices": [choice], **extra})

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces(reply.text):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.calls):
        full = _call(call)
        if call.kind == "custom":
            yield chunk({"tool_calls": [{"index": index, **full}]})
            continue
        arguments = full["function"]["arguments"]
        opened = {
            "index": index,
            "id": full["id"],
            "type": "function",
            "function": {"name": call.full_name, "arguments": ""},
        }
        yield chunk({"tool_calls": [opened]})
        for piece in pieces(arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    if include_usage:
        yield chunk({}, _finish(reply))
        yield frame({**base, "choices": [], "usage": usage(reply)})
    else:
        yield chunk({}, _finish(reply), usage=usage(reply))
    yield frame("[DONE]")
