"""Abstract tools map onto the tool each agent offers, with arguments fitting its schema."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer

from ._client import DRIVERS, Call, post
from .helpers import serve

TAPE = """
version: 1
conversations:
  - name: run
    match: "run it"
    turns:
      - tool_calls: [{tool: shell, args: {command: "echo hi", timeout: 5000}}]
      - text: done
  - name: read
    match: "read it"
    turns:
      - tool_calls: [{tool: read_file, args: {path: hello.txt}}]
      - text: done
  - name: write
    match: "write it"
    turns:
      - tool_calls:
          - {tool: write_file, args: {path: notes/todo.md, content: "# TODO\\n- ship it\\n"}}
      - text: done
  - name: write-raw
    match: "write raw"
    turns:
      - tool_calls:
          - tool: write_file
            args: {path: "odd name.txt", content: "it's $HOME `x` \\"q\\"\\nAXIS_EOF\\nno newline"}
      - text: done
  - name: echo
    match: "echo it"
    turns:
      - tool_calls: [{tool: echo, args: {text: hi}}]
      - text: done
  - name: patch
    match: "patch it"
    turns:
      - tool_calls: [{tool: apply_patch, args: {input: "*** Begin Patch\\n*** End Patch\\n"}}]
      - text: done
  - name: missing
    match: "missing tool"
    turns:
      - tool_calls: [{tool: not_offered, args: {a: 1}}]
      - text: done
"""


def _tool(name: str, props: dict[str, Any], required: list[str], desc: str = "") -> dict[str, Any]:
    schema = {"type": "object", "properties": props, "required": required}
    return {"name": name, "description": desc, "parameters": schema}


S = {"type": "string"}
ABS = {"type": "string", "description": "The absolute path to the file"}

CLAUDE = [
    _tool("Bash", {"command": S, "description": S, "timeout": {"type": "number"}}, ["command"]),
    _tool("Read", {"file_path": ABS, "offset": {"type": "number"}}, ["file_path"]),
    _tool("Write", {"file_path": ABS, "content": S}, ["file_path", "content"]),
    _tool("mcp__fake__echo", {"text": S}, ["text"]),
]
CODEX = [_tool("exec_command", {"cmd": S, "workdir": S}, ["cmd"])]
GEMINI = [
    _tool("run_shell_command", {"command": S, "description": S}, ["command", "description"]),
    _tool("read_file", {"file_path": S}, ["file_path"]),
    _tool("write_file", {"file_path": S, "content": S}, ["file_path", "content"]),
]
OPENCODE = [
    _tool("bash", {"command": S, "workdir": S}, ["command"]),
    _tool("read", {"filePath": S}, ["filePath"]),
    _tool("write", {"filePath": S, "content": S}, ["filePath", "content"]),
]
OLD_CODEX = [_tool("shell", {"command": {"type": "array", "items": S}}, ["command"])]


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModelServer]:
    with serve(TAPE) as server:
        yield server


def _ask(
    server: ScriptedModelServer, kind: str, prompt: str, tools: list[dict[str, Any]]
) -> list[Call]:
    driver = DRIVERS[kind](False)
    body = driver.minimal(prompt, tools)
    if kind == "anthropic":
        body["system"].append({"type": "text", "text": "Primary working directory: /work/proj"})
    return driver.send(server.url, body).calls


CASES = [
    # Claude Code
    ("anthropic", CLAUDE, "run it", "Bash", {"command": "echo hi", "timeout": 5000}),
    ("anthropic", CLAUDE, "read it", "Read", {"file_path": "/work/proj/hello.txt"}),
    (
        "anthropic",
        CLAUDE,
        "write it",
        "Write",
        {"file_path": "/work/proj/notes/todo.md", "content": "# TODO\n- ship it\n"},
    ),
    ("anthropic", CLAUDE, "echo it", "mcp__fake__echo", {"text": "hi"}),
    # Codex: no read or write tool, so both go through exec_command
    ("responses", CODEX, "run it", "exec_command", {"cmd": "echo hi", "timeout": 5000}),
    ("responses", CODEX, "read it", "exec_command", {"cmd": "cat -- hello.txt"}),
    # Gemini CLI: a required `description` the tape left out is filled in
    (
        "gemini",
        GEMINI,
        "run it",
        "run_shell_command",
        {"command": "echo hi", "timeout": 5000, "description": "Run echo hi"},
    ),
    ("gemini", GEMINI, "read it", "read_file", {"file_path": "hello.txt"}),
    (
        "gemini",
        GEMINI,
        "write it",
        "write_file",
        {"file_path": "notes/todo.md", "content": "# TODO\n- ship it\n"},
    ),
    # opencode
    ("chat", OPENCODE, "run it", "bash", {"command": "echo hi", "timeout": 5000}),
    ("chat", OPENCODE, "read it", "read", {"filePath": "hello.txt"}),
    (
        "chat",
        OPENCODE,
        "write it",
        "write",
        {"filePath": "notes/todo.md", "content": "# TODO\n- ship it\n"},
    ),
    # An argv-style shell tool
    (
        "responses",
        OLD_CODEX,
        "run it",
        "shell",
        {"command": ["bash", "-lc", "echo hi"], "timeout": 5000},
    ),
]


@pytest.mark.parametrize(("kind", "tools", "prompt", "name", "args"), CASES)
def test_abstract_tool_mapping(
    scripted: ScriptedModelServer,
    kind: str,
    tools: list[dict[str, Any]],
    prompt: str,
    name: str,
    args: dict[str, Any],
) -> None:
    calls = _ask(scripted, kind, prompt, tools)
    assert [(c.name, c.args) for c in calls] == [(name, args)]


@pytest.mark.parametrize("prompt", ["write it", "write raw"])
def test_write_without_a_write_tool_uses_the_shell(
    scripted: ScriptedModelServer, tmp_path: Path, prompt: str
) -> None:
    calls = _ask(scripted, "responses", prompt, CODEX)
    assert [c.name for c in calls] == ["exec_command"]
    command = calls[0].args["cmd"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, timeout=10)
    if prompt == "write it":
        assert "<<'AXIS_EOF'" in command
        assert (tmp_path / "notes" / "todo.md").read_text() == "# TODO\n- ship it\n"
    else:
        content = 'it\'s $HOME `x` "q"\nAXIS_EOF\nno newline'
        assert (tmp_path / "odd name.txt").read_bytes() == content.encode()
    assert scripted.requests[-1].tool_calls[0].via == "shell"


def test_write_with_only_apply_patch(scripted: ScriptedModelServer) -> None:
    body = {
        "model": "m",
        "input": "write it",
        "tools": [{"type": "custom", "name": "apply_patch", "description": "", "format": {}}],
        "stream": True,
    }
    answer = DRIVERS["responses"](True).send(scripted.url, body)
    assert [(c.name, c.kind) for c in answer.calls] == [("apply_patch", "custom")]
    assert answer.calls[0].args["input"] == (
        "*** Begin Patch\n*** Add File: notes/todo.md\n+# TODO\n+- ship it\n*** End Patch\n"
    )
    assert "response.custom_tool_call_input.delta" in answer.events


def test_exact_custom_tool_gets_its_input(scripted: ScriptedModelServer) -> None:
    body = {
        "model": "m",
        "input": "patch it",
        "tools": [{"type": "custom", "name": "apply_patch", "description": "", "format": {}}],
    }
    output = post(scripted.url, "/v1/responses", body).json()["output"]
    assert output == [
        {
            "type": "custom_tool_call",
            "id": output[0]["id"],
            "call_id": output[0]["call_id"],
            "name": "apply_patch",
            "input": "*** Begin Patch\n*** End Patch\n",
            "status": "completed",
        }
    ]


def test_a_tool_the_agent_does_not_offer_is_sent_and_flagged(scripted: ScriptedModelServer) -> None:
    calls = _ask(scripted, "chat", "missing tool", OPENCODE)
    assert [(c.name, c.args) for c in calls] == [("not_offered", {"a": 1})]
    assert scripted.requests[-1].tool_calls[0].offered is False


def test_local_shell_tool(scripted: ScriptedModelServer) -> None:
    body = {"model": "m", "input": "run it", "tools": [{"type": "local_shell"}]}
    output = post(scripted.url, "/v1/responses", body).json()["output"]
    assert output[0]["type"] == "local_shell_call"
    assert output[0]["action"]["command"] == ["bash", "-lc", "echo hi"]
