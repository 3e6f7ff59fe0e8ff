"""Each protocol, streaming and plain: a two-turn conversation (tool call, then final text)."""

from __future__ import annotations

import pytest

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, post, shell_tool, sse_events
from .helpers import CMD, PROMPT

# (driver, the shell tool that agent offers, the argument key its schema uses)
AGENTS = [
    ("anthropic", "Bash", "command"),
    ("responses", "exec_command", "cmd"),
    ("chat", "run_shell_command", "command"),
    ("gemini", "run_shell_command", "command"),
]
STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["stream", "plain"])


@STREAMS
@pytest.mark.parametrize(("kind", "tool", "key"), AGENTS, ids=[a[0] for a in AGENTS])
def test_two_turn_conversation(
    server: ScriptedModelServer, kind: str, tool: str, key: str, stream: bool
) -> None:
    driver = DRIVERS[kind](stream)
    other = shell_tool("unrelated_tool", "query")
    body = driver.minimal(PROMPT, [other, shell_tool(tool, key)])

    first = driver.send(server.url, body)
    assert first.text == "I'll create out.txt."
    assert [(c.name, c.args) for c in first.calls] == [(tool, {key: CMD})]
    assert first.stop in ("tool_use", "tool_calls")

    second = driver.send(server.url, driver.extend(body, first, ["hello\n"]))
    assert second.text == "Created out.txt."
    assert second.calls == []
    assert second.stop in ("end_turn", "stop")

    records = server.requests
    assert [(r.protocol, r.stream, r.conversation, r.turn, r.side) for r in records] == [
        (driver.protocol, stream, "hello", 0, False),
        (driver.protocol, stream, "hello", 1, False),
    ]
    assert [c.name for c in records[0].tool_calls] == [tool]
    assert records[0].tool_calls[0].tool == "shell"
    assert (records[0].usage.input_tokens, records[0].usage.output_tokens) == (
        first.input_tokens,
        first.output_tokens,
    )
    assert (records[1].usage.input_tokens, records[1].usage.output_tokens) == (
        second.input_tokens,
        second.output_tokens,
    )
    assert second.input_tokens > first.input_tokens > 0


def test_anthropic_event_sequence(server: ScriptedModelServer) -> None:
    driver = DRIVERS["anthropic"](True)
    body = driver.minimal(PROMPT, [shell_tool("Bash")])
    resp = post(server.url, "/v1/messages", body)
    events = sse_events(resp.body)
    names = [e.event for e in events]
    # text block, then tool_use block, each start/delta.../stop
    assert names[:2] == ["message_start", "ping"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    assert names[-2:] == ["message_delta", "message_stop"]
    deltas = [e.json()["delta"]["type"] for e in events if e.event == "content_block_delta"]
    assert "text_delta" in deltas and "input_json_delta" in deltas
    assert deltas.index("text_delta") < deltas.index("input_json_delta")
    message_delta = events[-2].json()
    assert message_delta["delta"]["stop_reason"] == "tool_use"
    assert message_delta["usage"]["output_tokens"] > 0
    start_usage = events[0].json()["message"]["usage"]
    assert start_usage["input_tokens"] == message_delta["usage"]["input_tokens"]
    assert resp.headers["connection"] == "close"


def test_responses_event_sequence(server: ScriptedModelServer) -> None:
    driver = DRIVERS["responses"](True)
    body = driver.minimal(PROMPT, [shell_tool("exec_command", "cmd")])
    answer = driver.send(server.url, body)
    # created → in_progress → message item → function_call item → completed
    assert answer.events[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert "response.output_text.delta" in answer.events
    calls_at = answer.events.index("response.function_call_arguments.delta")
    assert answer.events[calls_at - 1] == "response.output_item.added"
    assert answer.events[-2:] == ["response.output_item.done", "response.completed"]
    usage = answer.raw["usage"]
    assert usage["input_tokens_details"]["cached_tokens"] == 0
    assert usage["output_tokens"] == answer.output_tokens > 0


def test_chat_stream_without_include_usage_puts_usage_on_the_last_chunk(
    server: ScriptedModelServer,
) -> None:
    driver = DRIVERS["chat"](True)
    body = driver.minimal(PROMPT, [shell_tool("bash")])
    del body["stream_options"]
    resp = post(server.url, "/v1/chat/completions", body)
    events = sse_events(resp.body)
    assert events[-1].data == "[DONE]"
    last = events[-2].json()
    assert last["choices"][0]["finish_reason"] == "tool_calls"
    assert last["usage"]["prompt_tokens"] > 0
    assert all(e.json()["choices"] for e in events[:-1]), "no choice-less chunk without the option"


def test_gemini_stream_without_alt_sse_is_a_json_array(server: ScriptedModelServer) -> None:
    driver = DRIVERS["gemini"](True)
    body = driver.minimal(PROMPT, [shell_tool("run_shell_command")])
    resp = post(server.url, "/v1beta/models/gemini-test:streamGenerateContent", body)
    chunks = resp.json()
    assert isinstance(chunks, list)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert {"functionCall": {"name": "run_shell_command", "args": {"command": CMD}}} in parts
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] > 0


def test_responses_under_any_prefix(server: ScriptedModelServer) -> None:
    driver = DRIVERS["responses"](False)
    body = driver.minimal(PROMPT, [shell_tool("exec_command", "cmd")])
    resp = post(server.url, "/openai/deployments/x/responses", body)
    assert resp.status == 200
    assert resp.json()["output"][-1]["name"] == "exec_command"
