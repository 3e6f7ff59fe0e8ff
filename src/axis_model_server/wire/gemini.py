"""Gemini API: ``models/M:generateContent``, ``:streamGenerateContent`` and ``:countTokens``."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

from axis_model_server.normalize import Entry, ModelRequest
from axis_model_server.script import Reply
from axis_model_server.wire._body import (
    add_content,
    as_dict,
    as_list,
    declared_tool,
    flatten_text,
    int_or_none,
)
from axis_model_server.wire._sse import frame, pieces
from axis_model_server.wire._usage import token_counts

__all__ = ["chunks", "count_tokens", "model_info", "parse", "response", "stream", "usage"]


def parse(body: dict[str, Any], model: str | None, *, stream: bool) -> ModelRequest:
    """A ``generateContent`` / ``streamGenerateContent`` / ``countTokens`` request (the
    model and the streaming come from the URL, not the body)."""
    if isinstance(body.get("generateContentRequest"), dict):  # countTokens wraps the request
        body = body["generateContentRequest"]
    req = ModelRequest("gemini", model=model, stream=stream)
    system = body.get("systemInstruction") or body.get("system_instruction")
    add_content(req, "system", system if isinstance(system, str) else as_dict(system).get("parts"))
    for content in as_list(body.get("contents")):
        content = as_dict(content)
        role = content.get("role") or "user"
        for part in as_list(content.get("parts")):
            part = as_dict(part)
            if part.get("thought") is True:
                continue
            call = part.get("functionCall") or part.get("function_call")
            response = part.get("functionResponse") or part.get("function_response")
            if isinstance(call, dict):
                req.add_call(call.get("name"), call.get("args"))
            elif isinstance(response, dict):
                req.entries.append(Entry("tool", text=flatten_text(response.get("response"))))
            elif "text" in part:
                req.add_text("assistant" if role == "model" else "user", part.get("text"))
    for tool in as_list(body.get("tools")):
        tool = as_dict(tool)
        decls = tool.get("functionDeclarations") or tool.get("function_declarations")
        for decl in as_list(decls):
            decl = as_dict(decl)
            req.add_tool(
                declared_tool(decl, decl.get("parametersJsonSchema") or decl.get("parameters"))
            )
    config = as_dict(body.get("generationConfig") or body.get("generation_config"))
    if config.get("responseMimeType") == "application/json" or config.get(
        "responseJsonSchema", config.get("responseSchema")
    ):
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        req.json_schema = schema if isinstance(schema, dict) else {"type": "object"}
    req.max_tokens = int_or_none(config.get("maxOutputTokens"))
    return req


def usage(reply: Reply) -> dict[str, int]:
    return token_counts(reply, "promptTokenCount", "candidatesTokenCount", "totalTokenCount")


def _call_parts(reply: Reply) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": c.full_name, "args": c.args}} for c in reply.calls]


def _chunk(parts: list[dict[str, Any]], model: str, rid: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
        "modelVersion": model,
        "responseId": rid,
    }


def _finish(chunk: dict[str, Any], reply: Reply) -> dict[str, Any]:
    chunk["candidates"][0]["finishReason"] = "STOP"
    chunk["usageMetadata"] = usage(reply)
    return chunk


def response(reply: Reply, model: str) -> dict[str, Any]:
    """The ``generateContent`` response body."""
    parts = ([{"text": reply.text}] if reply.text else []) + _call_parts(reply)
    return _finish(_chunk(parts, model, secrets.token_hex(8)), reply)


def chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The ``streamGenerateContent`` chunks: text pieces, then the calls; the last chunk
    carries ``finishReason`` and ``usageMetadata``."""
    rid = secrets.token_hex(8)
    out = [_chunk([{"text": piece}], model, rid) for piece in pieces(reply.text)]
    calls = _call_parts(reply)
    if calls or not out:
        out.append(_chunk(calls, model, rid))
    _finish(out[-1], reply)
    return out


def count_tokens(reply: Reply) -> dict[str, Any]:
    """The ``countTokens`` response body."""
    return {"totalTokens": reply.input_tokens}


def model_info(name: str) -> dict[str, Any]:
    """An entry of ``GET /v1beta/models``, also ``GET /v1beta/models/NAME``."""
    return {
        "name": f"models/{name}",
        "displayName": "Scripted model (axis-model-server)",
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }


def stream(reply: Reply, model: str) -> Iterator[bytes]:
    """The chunks as SSE frames (``?alt=sse``; without it they go as one JSON array)."""
    for chunk in chunks(reply, model):
        yield frame(chunk)
