"""Answers depend on the conversation in the request: which one (the prompt) and which turn
(tool-calling assistant turns in the history), never on how many requests came before."""

from __future__ import annotations

from typing import Any

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, post, shell_tool
from .helpers import CMD, PROMPT, serve

TOOLS = [shell_tool("Bash"), shell_tool("Read", "file_path")]


def _anthropic(*messages: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 100,
        "messages": list(messages),
        "tools": [
            {"name": t["name"], "description": "", "input_schema": t["parameters"]} for t in TOOLS
        ],
    }


def _user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def _tool_turn(call_id: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": ""}],
        },
    ]


def _ask(server: ScriptedModelServer, body: dict[str, Any]) -> dict[str, Any]:
    resp = post(server.url, "/v1/messages", body)
    assert resp.status == 200
    return dict(resp.json())


def test_substring_regex_and_default(server: ScriptedModelServer) -> None:
    _ask(server, _anthropic(_user("<context>cwd: /w</context>", PROMPT)))
    _ask(server, _anthropic(_user("Please fix the bug in app.py")))
    _ask(server, _anthropic(_user("What is the weather?")))
    assert [r.conversation for r in server.requests] == ["hello", "bugfix", "default"]
    bugfix = server.requests[1].tool_calls[0]
    assert (bugfix.name, bugfix.args, bugfix.tool) == (
        "Read",
        {"file_path": "src/app.py"},
        "read_file",
    )
    assert server.requests[2].unmatched is False


def test_the_latest_prompt_text_wins_over_earlier_context(server: ScriptedModelServer) -> None:
    # Context mentions one conversation's match; the prompt after it asks for another.
    body = _anthropic(_user("Earlier: Create out.txt was done."), _user("Now fix the bug"))
    _ask(server, body)
    assert server.requests[0].conversation == "bugfix"


def test_unmatched_without_default() -> None:
    tape = """
version: 1
conversations:
  - name: only
    match: "special"
    turns: [{text: "special answer"}]
"""
    with serve(tape) as server:
        answer = _ask(server, _anthropic(_user("something else")))
        assert answer["content"] == [
            {"type": "text", "text": "(no tape conversation matches this prompt)"}
        ]
        record = server.requests[0]
        assert (record.unmatched, record.conversation, record.side) == (True, None, False)


def test_turn_comes_from_history_not_from_a_counter(server: ScriptedModelServer) -> None:
    prompt = _user(PROMPT)
    later = _anthropic(prompt, *_tool_turn("toolu_1"))
    _ask(server, later)  # the second turn first
    _ask(server, _anthropic(prompt))
    _ask(server, later)
    assert [r.turn for r in server.requests] == [1, 0, 1]
    assert [r.text for r in server.requests] == [
        "Created out.txt.",
        "I'll create out.txt.",
        "Created out.txt.",
    ]


def test_retries_get_the_same_answer(server: ScriptedModelServer) -> None:
    for kind in DRIVERS:
        for stream in (True, False):
            driver = DRIVERS[kind](stream)
            body = driver.minimal(PROMPT, [shell_tool("bash")])
            first, again = driver.send(server.url, body), driver.send(server.url, body)
            assert (first.text, first.calls) == (again.text, again.calls)
            assert (first.input_tokens, first.output_tokens) == (
                again.input_tokens,
                again.output_tokens,
            )
            assert [c.args for c in first.calls] == [{"command": CMD}]


def test_past_the_last_turn_repeats_the_last_text(server: ScriptedModelServer) -> None:
    body = _anthropic(_user(PROMPT), *_tool_turn("toolu_1"), *_tool_turn("toolu_2"))
    answer = _ask(server, body)
    assert answer["content"] == [{"type": "text", "text": "Created out.txt."}]
    assert answer["stop_reason"] == "end_turn"
    record = server.requests[0]
    assert (record.turn, record.past_end) == (2, True)


def test_parallel_calls_in_one_responses_turn_count_once(server: ScriptedModelServer) -> None:
    def call(n: int) -> list[dict[str, Any]]:
        return [
            {"type": "function_call", "call_id": f"c{n}", "name": "bash", "arguments": "{}"},
        ]

    body = {
        "model": "m",
        "input": [
            {"role": "user", "content": PROMPT},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "x"}],
            },
            *call(1),
            *call(2),
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
            {"type": "function_call_output", "call_id": "c2", "output": "b"},
        ],
        "tools": [{"type": "function", **shell_tool("bash")}],
    }
    output = post(server.url, "/v1/responses", body).json()["output"]
    assert output[0]["content"][0]["text"] == "Created out.txt."
    assert server.requests[0].turn == 1


def test_multi_call_turn(server: ScriptedModelServer) -> None:
    tape = """
version: 1
conversations:
  - name: two
    turns:
      - text: "Two things at once."
        tool_calls:
          - {tool: shell, args: {command: "ls"}}
          - {tool: shell, args: {command: "pwd", description: "Print dir"}}
      - text: "Both done."
"""
    with serve(tape) as scripted:
        for kind in DRIVERS:
            driver = DRIVERS[kind](True)
            body = driver.minimal("anything", [shell_tool("run_shell_command")])
            first = driver.send(scripted.url, body)
            assert [c.args for c in first.calls] == [
                {"command": "ls"},
                {"command": "pwd", "description": "Print dir"},
            ]
            assert len({c.id for c in first.calls}) == 2 or kind == "gemini"
            second = driver.send(scripted.url, driver.extend(body, first, ["a", "b"]))
            assert second.text == "Both done."
