"""Codex's newer tool shapes: namespaced MCP tools, deferred namespaces, and code mode
(tools in an ``additional_tools`` input item, the shell inside the JavaScript ``exec``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer
from axis_model_server.cli import describe_record
from axis_model_server.codex_tools import deferred_namespaces, nested_tools
from axis_model_server.normalize import OfferedTool
from axis_model_server.tools import code_call
from axis_model_server.wire.openai_responses import parse as parse_responses

from ._client import DRIVERS, post, sse_events
from .helpers import serve

TAPE = """
version: 1
conversations:
  - name: run
    match: "run it"
    turns:
      - tool_calls: [{tool: shell, args: {command: "echo hi"}}]
      - text: done
  - name: read
    match: "read it"
    turns:
      - tool_calls: [{tool: read_file, args: {path: hello.txt}}]
      - text: done
  - name: write
    match: "write it"
    turns:
      - tool_calls: [{tool: write_file, args: {path: a.txt, content: "hi\\n"}}]
      - text: done
  - name: echo
    match: "echo it"
    turns:
      - tool_calls: [{tool: echo, args: {text: hi}}]
      - text: done
  - name: echo-b
    match: "echo b"
    turns:
      - tool_calls: [{tool: mcp__b__echo, args: {text: hi}}]
      - text: done
  - name: exact
    match: "exact it"
    turns:
      - tool_calls:
          - {tool: exec_command, args: {cmd: "ls", workdir: /tmp}}
          - {tool: apply_patch, args: {input: "*** Begin Patch\\n*** End Patch\\n"}}
          - {tool: wait, args: {cell_id: "1"}}
      - text: done
"""

EXEC_DESCRIPTION = """Run JavaScript code to orchestrate/compose tool calls
- All nested tools are available on the global `tools` object.

### `apply_patch`
Edit files. This is a FREEFORM tool.

exec tool declaration:
```ts
declare const tools: { apply_patch(input: string): Promise<unknown>; };
```

### `exec_command`
Runs a command in a PTY.

exec tool declaration:
```ts
declare const tools: { exec_command(args: {
  // Shell command to execute. Braces in comments {like: this} are ignored.
  cmd: string;
  // Per-command sandbox override.
  sandbox_permissions?: "use_default" | "require_escalated";
  prefix_rule?: Array<string>;
  options?: {
    nested: string;
  };
  tty?: boolean;
}): Promise<{
  output: string;
  exit_code?: number;
}>; };
```

### `get_goal`
exec tool declaration:
```ts
declare const tools: { get_goal(args: {}): Promise<unknown>; };
```
"""

DEFERRED_TEXT = (
    "<tools>\nDeferred tool namespaces:\n- mcp__fake\n- multi_agent_v1: Sub-agents\n</tools>"
)


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def code_mode_body(prompt: str, *, deferred: str | None = None) -> dict[str, Any]:
    """A request shaped like Codex's with gpt-6.2-sol: no ``tools``, an ``additional_tools``
    item with the ``functions`` namespace holding ``exec`` (and ``wait``)."""
    functions = {
        "type": "namespace",
        "name": "functions",
        "description": "",
        "tools": [
            {
                "type": "custom",
                "name": "exec",
                "description": EXEC_DESCRIPTION,
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
            },
            {
                "type": "function",
                "name": "wait",
                "description": "Waits on a yielded exec cell.",
                "parameters": {
                    "type": "object",
                    "properties": {"cell_id": {"type": "string"}},
                    "required": ["cell_id"],
                },
            },
        ],
    }
    developer = "You are Codex." + (f"\n{deferred}" if deferred else "")
    return {
        "model": "gpt-6.2-sol",
        "stream": True,
        "input": [
            {"type": "additional_tools", "role": "developer", "tools": [functions]},
            _message("developer", developer),
            _message("user", prompt),
        ],
    }


def namespace_body(prompt: str, servers: tuple[str, ...] = ("fake",)) -> dict[str, Any]:
    """A request shaped like Codex's with gpt-5: each MCP server a ``namespace`` tool."""
    echo = {
        "type": "function",
        "name": "echo",
        "description": "Echo text back",
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }
    tools: list[dict[str, Any]] = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}
    ]
    tools += [
        {"type": "namespace", "name": f"mcp__{s}", "description": "", "tools": [echo]}
        for s in servers
    ]
    return {"model": "gpt-5", "stream": True, "input": [_message("user", prompt)], "tools": tools}


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedModelServer]:
    with serve(TAPE) as server:
        yield server


def _send(server: ScriptedModelServer, body: dict[str, Any], stream: bool = True) -> Any:
    return DRIVERS["responses"](stream).send(server.url, {**body, "stream": stream})


# ---------------------------------------------------------------------- parsing


def test_nested_tools_are_read_from_the_declarations() -> None:
    tools = {t.name: t for t in nested_tools(EXEC_DESCRIPTION)}
    assert list(tools) == ["apply_patch", "exec_command", "get_goal"]
    assert tools["apply_patch"].kind == "custom"
    assert tools["exec_command"].schema == {
        "type": "object",
        "properties": {
            "cmd": {"type": "string"},
            "sandbox_permissions": {"type": "string", "enum": ["use_default", "require_escalated"]},
            "prefix_rule": {"type": "array"},
            "options": {"type": "object"},
            "tty": {"type": "boolean"},
        },
        "required": ["cmd"],
    }
    assert tools["get_goal"].schema == {"type": "object", "properties": {}, "required": []}
    assert nested_tools("Run a shell command.") == []


def test_deferred_namespaces_are_read_from_the_tools_text() -> None:
    assert deferred_namespaces([DEFERRED_TEXT]) == ["mcp__fake", "multi_agent_v1"]
    assert deferred_namespaces(["no tools here", "Deferred tool namespaces:\n"]) == []


def test_code_mode_request_offers_its_additional_tools() -> None:
    req = parse_responses(code_mode_body("run it", deferred=DEFERRED_TEXT))
    assert [(t.full_name, t.kind, t.namespace) for t in req.tools] == [
        ("exec", "custom", None),
        ("wait", "function", None),
    ]
    assert req.code_tool is not None and req.code_tool.name == "exec"
    assert [t.name for t in req.nested] == ["apply_patch", "exec_command", "get_goal"]
    assert req.deferred == ["mcp__fake", "multi_agent_v1"]


def test_namespaced_tools_and_calls_get_full_names() -> None:
    body = namespace_body("echo it")
    body["input"] += [
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "echo",
            "namespace": "mcp__fake",
            "arguments": '{"text": "hi"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "hi"},
    ]
    req = parse_responses(body)
    assert [(t.name, t.namespace, t.full_name) for t in req.tools] == [
        ("exec_command", None, "exec_command"),
        ("echo", "mcp__fake", "mcp__fake__echo"),
    ]
    [call] = [e for e in req.entries if e.is_call]
    assert call.call_name == "mcp__fake__echo"
    assert req.turn_index() == 1
    assert OfferedTool("echo", namespace="functions").full_name == "echo"
    assert OfferedTool("mcp__x__y", namespace="mcp__x").full_name == "mcp__x__y"


# ---------------------------------------------------------------------- namespaced MCP tools


@pytest.mark.parametrize("prompt", ["echo it", "echo b"])
def test_a_namespaced_tool_is_called_with_its_namespace(
    scripted: ScriptedModelServer, prompt: str
) -> None:
    answer = _send(scripted, namespace_body(prompt, ("fake", "b")))
    [call] = answer.calls
    namespace = "mcp__fake" if prompt == "echo it" else "mcp__b"
    assert (call.name, call.namespace, call.args) == ("echo", namespace, {"text": "hi"})
    [record] = scripted.requests[-1].tool_calls
    assert (record.name, record.namespace, record.offered, record.via) == (
        "echo",
        namespace,
        True,
        None,
    )
    # The log line shows the full name, and the tape's name when it differs.
    shown = "mcp__fake__echo (echo)" if prompt == "echo it" else "mcp__b__echo"
    assert f"-> {shown} [in " in describe_record(scripted.requests[-1])


def test_the_namespace_is_in_every_shape_of_the_item(scripted: ScriptedModelServer) -> None:
    body = namespace_body("echo it")
    output = post(scripted.url, "/v1/responses", {**body, "stream": False}).json()["output"]
    assert output == [
        {
            "type": "function_call",
            "id": output[0]["id"],
            "call_id": output[0]["call_id"],
            "name": "echo",
            "arguments": '{"text": "hi"}',
            "status": "completed",
            "namespace": "mcp__fake",
        }
    ]
    resp = post(scripted.url, "/v1/responses", body)
    events = [e.json() for e in sse_events(resp.body)]
    items = [e["item"] for e in events if e["type"].startswith("response.output_item.")]
    assert [(i["name"], i["namespace"]) for i in items] == [("echo", "mcp__fake")] * 2


def test_other_protocols_get_the_full_name(scripted: ScriptedModelServer) -> None:
    # Only Responses has namespaces; elsewhere MCP tools carry the server in their name.
    tool = {"name": "mcp__fake__echo", "description": "", "parameters": {"type": "object"}}
    driver = DRIVERS["chat"](True)
    [call] = driver.send(scripted.url, driver.minimal("echo it", [tool])).calls
    assert call.name == "mcp__fake__echo"


# ---------------------------------------------------------------------- deferred namespaces


def _deferred_body(prompt: str, text: str) -> dict[str, Any]:
    body = namespace_body(prompt, servers=())
    body["model"] = "gpt-5.5"
    body["tools"].append(
        {"type": "tool_search", "execution": "client", "description": "Search deferred tools."}
    )
    body["input"].insert(0, _message("developer", text))
    return body


@pytest.mark.parametrize("prompt", ["echo it", "echo b"])
def test_a_deferred_tool_is_called_in_its_namespace(
    scripted: ScriptedModelServer, prompt: str
) -> None:
    text = DEFERRED_TEXT.replace("- mcp__fake", "- mcp__fake\n- mcp__b: the b server")
    if prompt == "echo it":
        text = DEFERRED_TEXT  # one MCP server: a bare `echo` can only be its tool
    [call] = _send(scripted, _deferred_body(prompt, text)).calls
    namespace = "mcp__fake" if prompt == "echo it" else "mcp__b"
    assert (call.name, call.namespace, call.args) == ("echo", namespace, {"text": "hi"})
    [record] = scripted.requests[-1].tool_calls
    assert (record.offered, record.via, record.namespace) == (True, "deferred", namespace)


def test_a_bare_name_is_not_guessed_among_several_deferred_servers(
    scripted: ScriptedModelServer,
) -> None:
    text = DEFERRED_TEXT.replace("- mcp__fake", "- mcp__fake\n- mcp__b")
    [call] = _send(scripted, _deferred_body("echo it", text)).calls
    assert (call.name, call.namespace) == ("echo", None)
    assert scripted.requests[-1].tool_calls[0].offered is False


# ---------------------------------------------------------------------- code mode


def _js(call: Any) -> str:
    assert (call.name, call.kind, call.namespace) == ("exec", "custom", None)
    return str(call.args["input"])


def test_code_mode_is_not_a_side_request(scripted: ScriptedModelServer) -> None:
    answer = _send(scripted, code_mode_body("run it"))
    assert _js(answer.calls[0]) == 'text(await tools.exec_command({"cmd": "echo hi"}));\n'
    record = scripted.requests[-1]
    assert (record.side, record.side_reason, record.turn) == (False, None, 0)
    [call] = record.tool_calls
    assert (call.name, call.tool, call.kind, call.via, call.offered) == (
        "exec",
        "shell",
        "custom",
        "exec",
        True,
    )
    assert "custom_tool_call" in [i["type"] for i in answer.raw["output"]]


@pytest.mark.parametrize(
    ("prompt", "command", "via"),
    [
        ("read it", "cat -- hello.txt", "shell"),
        ("write it", "cat > a.txt <<'AXIS_EOF'\nhi\nAXIS_EOF\n", "shell"),
    ],
)
def test_code_mode_files_go_through_the_shell(
    scripted: ScriptedModelServer, prompt: str, command: str, via: str
) -> None:
    [call] = _send(scripted, code_mode_body(prompt)).calls
    assert _js(call) == f"text(await tools.exec_command({json.dumps({'cmd': command})}));\n"
    assert scripted.requests[-1].tool_calls[0].via == via


def test_code_mode_exact_names(scripted: ScriptedModelServer) -> None:
    nested, patch, wait = _send(scripted, code_mode_body("exact it"), stream=False).calls
    # A declared tool goes through `exec` with its arguments verbatim ...
    assert _js(nested) == ('text(await tools.exec_command({"cmd": "ls", "workdir": "/tmp"}));\n')
    # ... a freeform one gets its text ...
    assert _js(patch) == ('text(await tools.apply_patch("*** Begin Patch\\n*** End Patch\\n"));\n')
    # ... and a tool of the default `functions` namespace is called directly, without one.
    assert (wait.name, wait.kind, wait.namespace, wait.args) == (
        "wait",
        "function",
        None,
        {"cell_id": "1"},
    )
    assert [c.via for c in scripted.requests[-1].tool_calls] == ["exec", "exec", None]


def test_code_mode_history_advances_the_turn(scripted: ScriptedModelServer) -> None:
    driver = DRIVERS["responses"](True)
    body = code_mode_body("run it")
    first = driver.send(scripted.url, body)
    second = driver.send(scripted.url, driver.extend(body, first, ["hi\n"]))
    assert second.text == "done" and second.calls == []
    assert scripted.requests[-1].turn == 1


def test_without_a_code_tool_the_shell_is_not_offered(scripted: ScriptedModelServer) -> None:
    body = code_mode_body("run it")
    body["input"][0]["tools"][0]["tools"][0]["description"] = "Run JavaScript."
    [call] = _send(scripted, body).calls
    assert (call.name, call.args) == ("shell", {"command": "echo hi"})
    assert scripted.requests[-1].tool_calls[0].offered is False


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_generated_javascript_runs(tmp_path: Path) -> None:
    exec_command = OfferedTool("exec_command")
    patch = OfferedTool("apply_patch", kind="custom")
    odd = OfferedTool("odd-name")
    sources = [
        code_call(exec_command, {"cmd": "printf '%s' \"a\\u2028b\" && echo `x` $HOME\n"}),
        code_call(patch, {"input": "*** Begin Patch\n*** End Patch\n"}),
        code_call(odd, {"k": ["v", 1, None, True]}),
    ]
    prelude = (
        "const seen = [];\n"
        "globalThis.tools = new Proxy({}, {get: (_, name) => async (arg) => {\n"
        "  seen.push([name, arg]); return {output: 'ok'}; }});\n"
        "globalThis.text = (v) => seen.push(['text', v]);\n"
    )
    script = tmp_path / "check.mjs"
    script.write_text(prelude + "".join(sources) + "console.log(JSON.stringify(seen));\n")
    assert NODE is not None
    out = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        ["exec_command", {"cmd": "printf '%s' \"a\\u2028b\" && echo `x` $HOME\n"}],
        ["text", {"output": "ok"}],
        ["apply_patch", "*** Begin Patch\n*** End Patch\n"],
        ["text", {"output": "ok"}],
        ["odd-name", {"k": ["v", 1, None, True]}],
        ["text", {"output": "ok"}],
    ]
