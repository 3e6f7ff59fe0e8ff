"""Gemini API: ``models/M:generateContent``, ``:streamGenerateContent`` and ``:countTokens``."""

from __future__ import annotations

import secrets
from typing import Any

from axis_model_server.script import Reply
from axis_model_server.wire._sse import pieces


def usage(reply: Reply) -> dict[str, int]:
    return {
        "promptTokenCount": reply.input_tokens,
        "candidatesTokenCount": reply.output_tokens,
        "totalTokenCount": reply.input_tokens + reply.output_tokens,
    }


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
