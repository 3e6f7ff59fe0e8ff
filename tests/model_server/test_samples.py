"""Replay the real agent CLIs' captured requests (tests/model_server/samples)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, load_samples, post
from .conftest import CMD


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
