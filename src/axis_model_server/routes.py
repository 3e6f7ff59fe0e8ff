"""Which answer a request gets: the path picks the protocol, the tape picks the reply.

Nothing here touches a socket: :func:`answer` takes a request's method, path and body and
returns an :class:`Answer` (a JSON body or SSE frames, and the fields of the request's log
record), or raises :class:`~axis_model_server.transport.Problem` for a request it refuses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import parse_qs

from axis_model_server.normalize import ModelRequest
from axis_model_server.records import ToolCallRecord, Usage
from axis_model_server.script import Reply, decide
from axis_model_server.tape import Tape
from axis_model_server.tools import EmittedCall
from axis_model_server.transport import Problem
from axis_model_server.wire import anthropic, gemini, openai_chat, openai_responses

__all__ = ["DEFAULT_MODEL", "MODEL_PROTOCOLS", "Answer", "answer"]

DEFAULT_MODEL = "scripted-model"
"""The model name answered when a request names none, and listed by ``GET /v1/models``."""

MODEL_PROTOCOLS = ("anthropic", "openai-responses", "openai-chat", "gemini")

_GEMINI = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_MODEL = re.compile(r"/models/([^/:]+)$")


@dataclass
class Answer:
    """A successful answer: a JSON ``body``, or SSE ``frames``; and what to log."""

    status: int
    body: Any = None
    frames: Iterable[bytes] | None = None
    record: dict[str, Any] = field(default_factory=dict)
    """Fields of the request's :class:`~axis_model_server.records.RequestRecord`."""


def answer(tape: Tape, method: str, path: str, body: bytes) -> Answer:
    """The answer to ``method path`` with ``body``, played from ``tape``."""
    route, _, query = path.partition("?")
    if method == "GET":
        return _get(route)
    if method != "POST":
        raise Problem(404, f"no route for {method} {route}", "not_found_error")
    payload = _json_body(body)
    if route.endswith("/messages/count_tokens"):
        return _counted(tape, anthropic.parse(payload), anthropic.count_tokens)
    if route.endswith("/messages"):
        return _played(tape, anthropic.parse(payload), anthropic.message, anthropic.stream)
    if route.endswith("/chat/completions"):
        options = payload.get("stream_options")
        include = isinstance(options, dict) and bool(options.get("include_usage"))
        frames = partial(openai_chat.stream, include_usage=include)
        return _played(tape, openai_chat.parse(payload), openai_chat.completion, frames)
    if route.endswith("/responses"):
        req = openai_responses.parse(payload)
        return _played(tape, req, openai_responses.response, openai_responses.stream)
    found = _GEMINI.search(route)
    if found:
        action = found.group(2)
        streaming = action == "streamGenerateContent"
        req = gemini.parse(payload, found.group(1), stream=streaming)
        if action == "countTokens":
            return _counted(tape, req, gemini.count_tokens)
        # A streaming request without ``alt=sse`` gets all its chunks as one JSON array.
        sse = gemini.stream if parse_qs(query).get("alt") == ["sse"] else None
        return _played(tape, req, gemini.chunks if streaming else gemini.response, sse)
    raise Problem(404, f"no route for POST {route}", "not_found_error")


def _played(
    tape: Tape,
    req: ModelRequest,
    body: Callable[[Reply, str], Any],
    frames: Callable[[Reply, str], Iterable[bytes]] | None = None,
) -> Answer:
    """The tape's reply to a model request: SSE ``frames`` when it asks to stream."""
    reply = decide(tape, req)
    model = req.model or DEFAULT_MODEL
    if req.stream and frames is not None:
        return _answer(req, reply, frames=frames(reply, model))
    return _answer(req, reply, body(reply, model))


def _counted(tape: Tape, req: ModelRequest, body: Callable[[Reply], Any]) -> Answer:
    """The answer to a token-counting request."""
    reply = decide(tape, req, count_only=True)
    return _answer(req, reply, body(reply))


def _get(route: str) -> Answer:
    name = DEFAULT_MODEL
    if route.rstrip("/").endswith("/models"):
        if "/v1beta/" in route or "/v1alpha/" in route:
            listing: dict[str, Any] = {"models": [gemini.model_info(name)]}
        else:
            listing = {
                "object": "list",
                "data": [_model_info(name)],
                "has_more": False,
                "first_id": name,
                "last_id": name,
            }
        return Answer(200, listing, record={"protocol": "models"})
    found = _MODEL.search(route)
    if found:
        wanted = found.group(1)
        body = gemini.model_info(wanted) if "/v1beta/" in route else _model_info(wanted)
        return Answer(200, body, record={"protocol": "models", "model": wanted})
    raise Problem(404, f"no route for GET {route}", "not_found_error")


def _model_info(name: str) -> dict[str, Any]:
    """A model as OpenAI (``object``, ``owned_by``) and Anthropic (``type``,
    ``display_name``) clients list it: one body serves both."""
    return {
        "id": name,
        "object": "model",
        "type": "model",
        "created": 0,
        "created_at": "1970-01-01T00:00:00Z",
        "owned_by": "axis-model-server",
        "display_name": "Scripted model (axis-model-server)",
    }


def _json_body(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise Problem(400, "the request has no JSON body")
    try:
        payload = json.loads(raw)
    except ValueError as error:
        raise Problem(400, f"the request body is not valid JSON: {error}") from None
    if not isinstance(payload, dict):
        raise Problem(400, "the request body must be a JSON object")
    return payload


def _answer(
    req: ModelRequest, reply: Reply, body: Any = None, *, frames: Iterable[bytes] | None = None
) -> Answer:
    counting = reply.side == "count_tokens"
    usage = (
        Usage()
        if counting
        else Usage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens)
    )
    record = {
        "protocol": req.protocol,
        "model": req.model,
        "stream": req.stream,
        "conversation": reply.conversation,
        "turn": reply.turn,
        "side": reply.side is not None,
        "side_reason": reply.side,
        "unmatched": reply.unmatched,
        "past_end": reply.past_end,
        "usage": usage,
        "text": None if counting else reply.text,
        "tool_calls": [_call_record(c) for c in reply.calls],
    }
    return Answer(200, body, frames, record)


def _call_record(call: EmittedCall) -> ToolCallRecord:
    """A sent call as logged: the same fields, with the tape's tool name as ``tool``."""
    fields = {name: getattr(call, name) for name in ToolCallRecord.model_fields if name != "tool"}
    return ToolCallRecord(tool=call.tape_tool, **fields)
