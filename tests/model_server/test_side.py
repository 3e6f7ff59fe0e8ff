"""Side requests (routing, titles, quota probes, tool-less calls) get minimal valid answers
and never move the conversation on."""

from __future__ import annotations

import json

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, post, shell_tool
from .helpers import CMD, PROMPT

SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["easy", "hard"]},
        "score": {"type": "integer", "minimum": 3},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ok": {"type": "boolean"},
        "nested": {
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 5}, "extra": {"type": "string"}},
            "required": ["name"],
        },
        "optional": {"type": "string"},
    },
    "required": ["label", "score", "ratio", "tags", "ok", "nested"],
}
SMALLEST = {
    "label": "easy",
    "score": 3,
    "ratio": 1,
    "tags": [],
    "ok": False,
    "nested": {"name": "okkkk"},
}


def test_gemini_router_json(server: ScriptedModelServer) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA},
    }
    resp = post(server.url, "/v1beta/models/flash-lite:generateContent", body).json()
    assert json.loads(resp["candidates"][0]["content"]["parts"][0]["text"]) == SMALLEST
    record = server.requests[0]
    assert (record.side, record.side_reason, record.conversation) == (True, "json", "hello")


def test_gemini_upper_case_schema(server: ScriptedModelServer) -> None:
    schema = {
        "type": "OBJECT",
        "properties": {"n": {"type": "INTEGER"}, "s": {"type": "STRING"}},
        "required": ["n", "s"],
    }
    body = {
        "contents": [{"role": "user", "parts": [{"text": "route me"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseSchema": schema},
    }
    resp = post(server.url, "/v1beta/models/x:generateContent", body).json()
    assert json.loads(resp["candidates"][0]["content"]["parts"][0]["text"]) == {"n": 1, "s": "ok"}


def test_openai_json_formats(server: ScriptedModelServer) -> None:
    chat = {
        "model": "m",
        "messages": [{"role": "user", "content": PROMPT}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}},
    }
    message = post(server.url, "/v1/chat/completions", chat).json()["choices"][0]["message"]
    assert json.loads(message["content"]) == SMALLEST
    responses = {
        "model": "m",
        "input": PROMPT,
        "text": {"format": {"type": "json_schema", "name": "x", "schema": SCHEMA}},
    }
    output = post(server.url, "/v1/responses", responses).json()["output"]
    assert json.loads(output[0]["content"][0]["text"]) == SMALLEST
    chat["response_format"] = {"type": "json_object"}
    message = post(server.url, "/v1/chat/completions", chat).json()["choices"][0]["message"]
    assert json.loads(message["content"]) == {}
    assert [r.side_reason for r in server.requests] == ["json"] * 3


def test_title_request_without_tools(server: ScriptedModelServer) -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Generate a title for this conversation:\n"},
            {"role": "user", "content": f'"{PROMPT}"'},
        ],
    }
    answer = DRIVERS["chat"](False).send(server.url, body)
    assert (answer.text, answer.calls) == ("ok", [])
    assert server.requests[0].side_reason == "title"


def test_quota_probe(server: ScriptedModelServer) -> None:
    body = {"model": "haiku", "max_tokens": 1, "messages": [{"role": "user", "content": "quota"}]}
    answer = DRIVERS["anthropic"](False).send(server.url, body)
    assert answer.text == "ok" and answer.stop == "end_turn"
    assert server.requests[0].side_reason == "quota"


def test_no_tools_offered_while_the_turn_needs_tools(server: ScriptedModelServer) -> None:
    driver = DRIVERS["anthropic"](True)
    bare = driver.minimal(PROMPT, [])
    side = driver.send(server.url, bare)
    assert side.text == "ok" and side.calls == []
    # The real request that follows still gets turn 0's tool call.
    real = driver.send(server.url, driver.minimal(PROMPT, [shell_tool("Bash")]))
    assert [(c.name, c.args) for c in real.calls] == [("Bash", {"command": CMD})]
    assert [(r.side_reason, r.turn) for r in server.requests] == [("no_tools", 0), (None, 0)]


def test_tool_less_client_gets_text_turns(server: ScriptedModelServer) -> None:
    # A client offering no tools, on a conversation whose next turn is text: a real turn.
    answer = DRIVERS["chat"](False).send(
        server.url, {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
    )
    assert answer.text == "I only answer scripted prompts."
    record = server.requests[0]
    assert (record.side, record.conversation) == (False, "default")
