"""Replay the real agent CLIs' captured requests (tests/model_server/samples)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, load_samples, post
from .helpers import CMD, serve


def _posts(name: str) -> list[dict[str, Any]]:
    return [d for d in load_samples(name) if d["method"] == "POST"]


def _raw_connect(url_port: int, target: str) -> bytes:
    with socket.create_connection(("127.0.0.1", url_port), timeout=5) as sock:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        return sock.recv(4096)


@pytest.mark.parametrize("restore", [True, False], ids=["tools", "trimmed-tools"])
def test_claude_code_capture(server: ScriptedModelServer, restore: bool) -> None:
    first_req, second_req = _posts("claude_requests.json")
    driver = DRIVERS["anthropic"](True)
    prepare = driver.restore_tools if restore else (lambda b: b)
    body = prepare(first_req["body"])
    # Claude Code puts a role:"system" message in the middle of the conversation.
    assert any(m["role"] == "system" for m in body["messages"])

    first = driver.send(server.url, body)
    assert [(c.name, c.args) for c in first.calls] == [("Bash", {"command": CMD})]
    # The captured second request carries the lab server's tool call and its result.
    second = driver.send(server.url, prepare(second_req["body"]))
    assert second.text == "Created out.txt." and second.calls == []
    # And our own answer, fed back the way Claude Code does, gives the same final answer.
    driven = driver.send(server.url, driver.extend(body, first, ["hello"]))
    assert driven.text == "Created out.txt."
    assert [r.path for r in server.requests] == ["/v1/messages?beta=true"] * 3
    assert [r.turn for r in server.requests] == [0, 1, 1]


def test_codex_capture(server: ScriptedModelServer) -> None:
    first_req, second_req = _posts("codex_requests.json")
    driver = DRIVERS["responses"](True)
    body = driver.restore_tools(first_req["body"])
    # The prompt is the second user message (the first is <environment_context>).
    sent = {k: v for k, v in first_req["headers"].items() if k in ("user-agent", "originator")}
    first = driver.send(server.url, body, headers=sent)
    assert [(c.name, c.args) for c in first.calls] == [("exec_command", {"cmd": CMD})]
    second = driver.send(server.url, driver.restore_tools(second_req["body"]))
    assert second.text == "Created out.txt."
    driven = driver.send(server.url, driver.extend(body, first, ["hello\n"]))
    assert driven.text == "Created out.txt."
    assert {r.conversation for r in server.requests} == {"hello"}
    assert server.requests[0].headers == {
        "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)",
        "originator": "codex_exec",
    }


def test_gemini_cli_capture(server: ScriptedModelServer) -> None:
    router, main = _posts("gemini_requests.json")
    # The model router asks for JSON that fits a schema: a side request.
    resp = post(server.url, router["path"], router["body"])
    text = resp.json()["candidates"][0]["content"]["parts"][0]["text"]
    verdict = json.loads(text)
    assert set(verdict) == {"complexity_reasoning", "complexity_score"}
    assert isinstance(verdict["complexity_score"], int)
    assert isinstance(verdict["complexity_reasoning"], str)

    driver = DRIVERS["gemini"](True)
    first = driver.send(server.url, main["body"], model="gemini-3.8-flash")
    assert [(c.name, c.args) for c in first.calls] == [("run_shell_command", {"command": CMD})]
    second = driver.send(
        server.url, driver.extend(main["body"], first, ["hello"]), model="gemini-3.8-flash"
    )
    assert second.text == "Created out.txt."

    records = server.requests
    assert [(r.model, r.side_reason, r.turn) for r in records] == [
        ("gemini-3.5-flash-lite", "json", 0),
        ("gemini-3.8-flash", None, 0),
        ("gemini-3.8-flash", None, 1),
    ]


def test_qwen_code_capture(server: ScriptedModelServer) -> None:
    first_req, second_req = _posts("qwen_requests.json")
    driver = DRIVERS["chat"](True)
    # An assistant "Got it" message sits between the context and the prompt.
    first = driver.send(server.url, driver.restore_tools(first_req["body"]))
    assert [(c.name, c.args) for c in first.calls] == [("run_shell_command", {"command": CMD})]
    second = driver.send(server.url, driver.restore_tools(second_req["body"]))
    assert second.text == "Created out.txt."


def test_opencode_capture(server: ScriptedModelServer) -> None:
    driver = DRIVERS["chat"](True)
    answers = []
    for doc in load_samples("opencode_requests.json"):
        if doc["method"] == "CONNECT":
            assert _raw_connect(server.port, doc["path"]).startswith(b"HTTP/1.1 403")
            continue
        answers.append(driver.send(server.url, driver.restore_tools(doc["body"])))
    title, call, final = answers
    assert title.text == "ok" and title.calls == []
    assert [(c.name, c.args) for c in call.calls] == [("bash", {"command": CMD})]
    assert final.text == "Created out.txt."
    assert [(r.side_reason, r.turn) for r in server.requests] == [
        ("title", 0),
        (None, 0),
        (None, 1),
    ]
    assert [(a.host, a.port) for a in server.connect_attempts] == [
        ("models.opencode.ai", 443),
        ("registry.npmjs.org", 443),
    ]


# ---------------------------------------------------------------------- Codex: newer shapes

CODE_JS = 'text(await tools.exec_command({"cmd": "echo hello > out.txt && cat out.txt"}));\n'

ECHO_TAPE = """
version: 1
conversations:
  - name: echo
    match: Echo
    turns:
      - text: "I'll run it."
        tool_calls: [{tool: %s, args: {text: ping}}]
      - text: Echoed.
"""


def test_codex_code_mode_capture(server: ScriptedModelServer) -> None:
    # Codex's default model (gpt-6.2-sol) sends no `tools`: its tools come in an
    # `additional_tools` input item, the shell only inside the JavaScript `exec` tool.
    first_req, second_req = _posts("codex_code_mode_requests.json")
    driver = DRIVERS["responses"](True)
    body = driver.restore_tools(first_req["body"])
    assert "tools" not in body and body["input"][0]["type"] == "additional_tools"
    first = driver.send(server.url, body, headers=_kept(first_req))
    [call] = first.calls
    assert (call.name, call.kind, call.args, call.namespace) == (
        "exec",
        "custom",
        {"input": CODE_JS},
        None,
    )
    # The captured second request holds this very call (the capture's tape had the same
    # conversation name, so the same call id) and Codex's result of running it.
    history = second_req["body"]["input"]
    [sent] = [i for i in history if i["type"] == "custom_tool_call"]
    assert (sent["call_id"], sent["name"], sent["input"]) == (call.id, "exec", CODE_JS)
    [result] = [i for i in history if i["type"] == "custom_tool_call_output"]
    assert '\\"exit_code\\":0' in json.dumps(result["output"]) and "hello" in str(result)
    second = driver.send(server.url, driver.restore_tools(second_req["body"]))
    assert second.text == "Created out.txt." and second.calls == []
    driven = driver.send(server.url, driver.extend(body, first, ["hello\n"]))
    assert driven.text == "Created out.txt."
    records = server.requests
    assert [(r.model, r.side, r.conversation, r.turn) for r in records] == [
        ("gpt-6.2-sol", False, "hello", 0),
        ("gpt-6.2-sol", False, "hello", 1),
        ("gpt-6.2-sol", False, "hello", 1),
    ]
    [record] = records[0].tool_calls
    assert (record.name, record.tool, record.kind, record.via) == (
        "exec",
        "shell",
        "custom",
        "exec",
    )
    assert records[0].headers["user-agent"].startswith("codex_exec/0.171.0 ")


def _kept(doc: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in doc["headers"].items() if k in ("user-agent", "originator")}


@pytest.mark.parametrize("tool", ["echo", "mcp__fake__echo"])
def test_codex_mcp_captures(tool: str) -> None:
    # gpt-5 gets the MCP server as a `namespace` tool; gpt-5.5 (behind `tool_search`) and
    # gpt-6.2-sol (behind `exec`) only see "Deferred tool namespaces: - mcp__fake".
    docs = _posts("codex_mcp_requests.json")
    assert [d["body"]["model"] for d in docs] == [
        "gpt-5",
        "gpt-5",
        "gpt-5.5",
        "gpt-5.5",
        "gpt-6.2-sol",
    ]
    driver = DRIVERS["responses"](True)
    with serve(ECHO_TAPE % tool) as server:
        for index, doc in enumerate(docs):
            body = driver.restore_tools(doc["body"])
            answer = driver.send(server.url, body)
            if _has_call(doc):
                # Codex sends the namespace back in the history: the second turn answers.
                [sent] = [i for i in body["input"] if i["type"] == "function_call"]
                assert (sent["name"], sent["namespace"]) == ("echo", "mcp__fake")
                assert answer.text == "Echoed." and answer.calls == []
                continue
            [call] = answer.calls
            assert (call.name, call.namespace, call.args) == ("echo", "mcp__fake", {"text": "ping"})
            [item] = [i for i in answer.raw["output"] if i["type"] == "function_call"]
            assert (item["name"], item["namespace"]) == ("echo", "mcp__fake")
            if index + 1 < len(docs) and _has_call(docs[index + 1]):
                # The same call as the one Codex ran in the capture.
                [ran] = [
                    i for i in docs[index + 1]["body"]["input"] if i["type"] == "function_call"
                ]
                assert {k: ran[k] for k in ("call_id", "name", "namespace", "arguments")} == {
                    "call_id": call.id,
                    "name": "echo",
                    "namespace": "mcp__fake",
                    "arguments": item["arguments"],
                }
        records = server.requests
    assert [(r.model, r.turn, r.side) for r in records] == [
        ("gpt-5", 0, False),
        ("gpt-5", 1, False),
        ("gpt-5.5", 0, False),
        ("gpt-5.5", 1, False),
        ("gpt-6.2-sol", 0, False),
    ]
    sent = [(c.name, c.namespace, c.via) for r in records for c in r.tool_calls]
    assert sent == [
        ("echo", "mcp__fake", None),
        ("echo", "mcp__fake", "deferred"),
        ("echo", "mcp__fake", "deferred"),
    ]


def _has_call(doc: dict[str, Any]) -> bool:
    return any(i.get("type") == "function_call" for i in doc["body"]["input"])
