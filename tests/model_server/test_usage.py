"""Usage is derived the same way on every protocol, and the log says what the client got."""

from __future__ import annotations

import json
import math

from axis_model_server import ScriptedModelServer
from axis_model_server.script import Reply
from axis_model_server.wire import gemini, openai_chat, openai_responses

from ._client import DRIVERS, post, shell_tool
from .helpers import CMD, PROMPT


def _conversation(server: ScriptedModelServer, kind: str, stream: bool) -> list[tuple[int, int]]:
    driver = DRIVERS[kind](stream)
    body = driver.minimal(PROMPT, [shell_tool("bash")])
    first = driver.send(server.url, body)
    second = driver.send(server.url, driver.extend(body, first, ["hello\n"]))
    return [(a.input_tokens, a.output_tokens) for a in (first, second)]


def test_usage_is_identical_across_protocols(server: ScriptedModelServer) -> None:
    seen = {
        (kind, stream): _conversation(server, kind, stream)
        for kind in DRIVERS
        for stream in (True, False)
    }
    reference = seen[("anthropic", True)]
    assert all(counts == reference for counts in seen.values()), seen
    # The log holds exactly what each client was told.
    logged = [(r.usage.input_tokens, r.usage.output_tokens) for r in server.requests]
    assert logged == [pair for counts in seen.values() for pair in counts]
    totals = server.usage_totals()
    assert totals.requests == 16 and totals.side_requests == 0
    assert totals.main == totals.all
    assert totals.main.input_tokens == sum(i for i, _ in logged)
    assert totals.main.output_tokens == sum(o for _, o in logged)


def test_usage_formula(server: ScriptedModelServer) -> None:
    body = {
        "model": "m",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Create out.txt please"}],
        "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object"}}],
    }
    usage = post(server.url, "/v1/messages", body).json()["usage"]
    canonical = {
        "system": "Be brief.",
        "messages": [{"role": "user", "text": "Create out.txt please"}],
        "tools": [{"name": "Bash", "description": "Run", "parameters": {"type": "object"}}],
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert usage["input_tokens"] == math.ceil(len(text) / 4)
    answer = "I'll create out.txt." + json.dumps({"command": CMD}, separators=(",", ":"))
    assert usage["output_tokens"] == math.ceil(len(answer) / 4)
    assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_count_tokens_matches_the_messages_request(server: ScriptedModelServer) -> None:
    driver = DRIVERS["anthropic"](False)
    body = driver.minimal(PROMPT, [shell_tool("Bash")])
    counted = post(server.url, "/v1/messages/count_tokens", body).json()
    answered = driver.send(server.url, body)
    assert counted == {"input_tokens": answered.input_tokens}
    gemini = DRIVERS["gemini"](False).minimal(PROMPT, [shell_tool("Bash")])
    total = post(server.url, "/v1beta/models/g:countTokens", gemini).json()
    assert total == {"totalTokens": answered.input_tokens}
    count_record = server.requests[0]
    assert count_record.side_reason == "count_tokens"
    assert count_record.usage.input_tokens == count_record.usage.output_tokens == 0


def test_totals_separate_side_requests(server: ScriptedModelServer) -> None:
    driver = DRIVERS["chat"](False)
    main = driver.send(server.url, driver.minimal(PROMPT, [shell_tool("bash")]))
    title = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "You are a title generator."},
            {"role": "user", "content": PROMPT},
        ],
    }
    side = driver.send(server.url, title)
    totals = server.usage_totals()
    assert (totals.main.input_tokens, totals.main.output_tokens) == (
        main.input_tokens,
        main.output_tokens,
    )
    assert totals.all.input_tokens == main.input_tokens + side.input_tokens
    assert totals.all.output_tokens == main.output_tokens + side.output_tokens
    assert (totals.requests, totals.side_requests) == (2, 1)
    assert totals.all.total_tokens == totals.all.input_tokens + totals.all.output_tokens


def test_each_protocol_names_the_same_three_counts_in_its_own_order() -> None:
    reply = Reply("hi", (), None, 1, None, False, False, input_tokens=7, output_tokens=3)
    assert list(gemini.usage(reply).items()) == [
        ("promptTokenCount", 7),
        ("candidatesTokenCount", 3),
        ("totalTokenCount", 10),
    ]
    assert list(openai_chat.usage(reply).items()) == [
        ("prompt_tokens", 7),
        ("completion_tokens", 3),
        ("total_tokens", 10),
        ("prompt_tokens_details", {"cached_tokens": 0}),
        ("completion_tokens_details", {"reasoning_tokens": 0}),
    ]
    assert list(openai_responses.usage(reply))[-1] == "total_tokens"
    assert openai_responses.usage(reply)["total_tokens"] == 10
