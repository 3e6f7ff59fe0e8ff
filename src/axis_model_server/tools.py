"""Map a tape's tool call onto the tools the requesting agent offers."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any

from axis_model_server.normalize import ModelRequest, OfferedTool, canonical_json, qualified_name
from axis_model_server.schema_values import smallest_value
from axis_model_server.tape import ToolCall

__all__ = [
    "COMMAND_KEYS",
    "CONTENT_KEYS",
    "PATH_KEYS",
    "READ_TOOLS",
    "SHELL_TOOLS",
    "WRITE_TOOLS",
    "EmittedCall",
    "code_call",
    "resolve_call",
    "write_command",
]

SHELL_TOOLS = (
    "Bash",  # Claude Code
    "exec_command",  # Codex
    "shell_command",  # Codex (older)
    "shell",  # Codex (older, argv command)
    "run_shell_command",  # Gemini CLI, Qwen Code
    "bash",  # opencode
)
"""Shell tools by name, in order of preference; Responses ``local_shell`` comes last."""

READ_TOOLS = ("Read", "read_file", "read", "view", "ReadFile")
WRITE_TOOLS = ("Write", "write_file", "write", "create_file", "WriteFile")
COMMAND_KEYS = ("command", "cmd")
PATH_KEYS = ("file_path", "absolute_path", "path", "filePath")
CONTENT_KEYS = ("content", "text")

_CWD_PATTERNS = (
    re.compile(r"<cwd>\s*([^<\n]+?)\s*</cwd>"),
    re.compile(
        r"(?:Primary working directory|Working directory|Current working directory):\s*(/\S*)"
    ),
    re.compile(r"currently working in the directory:\s*(/\S*)"),
)


@dataclass(frozen=True)
class EmittedCall:
    """A tool call as the server sends it to the agent."""

    call_id: str
    """A stable hex id (protocols add their own prefix)."""
    name: str
    """The tool name sent (an offered tool's name when one fits)."""
    kind: str
    """``function``, ``custom`` (freeform ``input`` text) or ``local_shell``."""
    args: dict[str, Any]
    """The arguments sent; for ``custom`` tools ``{"input": text}``."""
    tape_tool: str
    """The tool as the tape names it (``shell``, ``Bash``, ``echo`` ...)."""
    offered: bool
    """False when the request offered no fitting tool (the call is sent anyway)."""
    via: str | None = None
    """How the call reaches the tool when the agent offers no direct fit: ``shell`` (read
    or write through the shell tool), ``apply_patch``, ``exec`` (JavaScript for Codex's
    code tool calling a tool it declares) or ``deferred`` (a tool of a namespace the agent
    lists without sending its tools)."""
    namespace: str | None = None
    """The Responses namespace of the tool (``mcp__fake`` for Codex's MCP tools): sent
    as the call's ``namespace`` next to the bare ``name``."""

    @property
    def full_name(self) -> str:
        """``namespace__name``, or the name when there is no namespace."""
        return qualified_name(self.namespace, self.name)

    @property
    def input_text(self) -> str:
        value = self.args.get("input", "")
        return value if isinstance(value, str) else canonical_json(value)

    def arguments_json(self) -> str:
        return canonical_json(self.args)


def resolve_call(call: ToolCall, req: ModelRequest, call_id: str) -> EmittedCall:
    """The call to send for ``call`` given the tools offered in ``req``."""
    if call.tool == "shell":
        return _shell(call.args, req, call_id, call.tool)
    if call.tool == "read_file":
        return _read(call, req, call_id)
    if call.tool == "write_file":
        return _write(call, req, call_id)
    return _exact(call, req, call_id)


# ---------------------------------------------------------------------- shell


def _shell_tool(req: ModelRequest) -> OfferedTool | None:
    for name in SHELL_TOOLS:
        tool = req.find_tool(name)
        if tool is not None and tool.kind in ("function", "custom"):
            return tool
    return next((t for t in req.tools if t.kind == "local_shell"), None)


def _nested_shell(req: ModelRequest) -> OfferedTool | None:
    """The shell tool the agent's code tool declares (Codex's ``exec`` → ``exec_command``)."""
    if req.code_tool is None:
        return None
    for name in SHELL_TOOLS:
        tool = next((t for t in req.nested if t.name == name), None)
        if tool is not None:
            return tool
    return None


def _can_shell(req: ModelRequest) -> bool:
    return _shell_tool(req) is not None or _nested_shell(req) is not None


def _shell(
    args: dict[str, Any], req: ModelRequest, call_id: str, tape_tool: str, via: str | None = None
) -> EmittedCall:
    command = str(args["command"])
    extras = {k: v for k, v in args.items() if k != "command"}
    tool = _shell_tool(req)
    if tool is None:
        nested = _nested_shell(req)
        if nested is not None:
            out = _shell_args(nested, command, extras)
            return _through_code(req, nested, out, call_id, tape_tool, via or "exec")
        return EmittedCall(call_id, "shell", "function", dict(args), tape_tool, False, via)
    if tool.kind == "local_shell":
        argv = ["bash", "-lc", command]
        return EmittedCall(
            call_id, "local_shell", "local_shell", {"command": argv}, tape_tool, True, via
        )
    out = _shell_args(tool, command, extras)
    return EmittedCall(
        call_id, tool.name, tool.kind, out, tape_tool, True, via, namespace=tool.namespace
    )


def _shell_args(tool: OfferedTool, command: str, extras: dict[str, Any]) -> dict[str, Any]:
    props = tool.properties
    key = next((k for k in COMMAND_KEYS if k in props), None)
    if key is None:
        key = "cmd" if tool.name == "exec_command" else "command"
    prop = props.get(key)
    is_argv = isinstance(prop, dict) and prop.get("type") == "array"
    out: dict[str, Any] = {key: ["bash", "-lc", command] if is_argv else command, **extras}
    _fill_required(tool, out, description=_describe(command))
    return out


# ---------------------------------------------------------------------- code tools

_IDENTIFIER = re.compile(r"^[A-Za-z_$][\w$]*$")


def code_call(tool: OfferedTool, args: dict[str, Any]) -> str:
    """JavaScript for Codex's ``exec`` that calls the nested ``tool`` once and hands its
    result back: ``text(await tools.exec_command({"cmd": "ls"}));``."""
    target = f"tools.{tool.name}" if _IDENTIFIER.match(tool.name) else f"tools[{_js(tool.name)}]"
    argument = args.get("input", "") if tool.kind == "custom" else args
    return f"text(await {target}({_js(argument)}));\n"


def _js(value: Any) -> str:
    # JSON is a JavaScript expression (ES2019 allows U+2028/U+2029 in strings).
    return json.dumps(value, ensure_ascii=False)


def _through_code(
    req: ModelRequest,
    nested: OfferedTool,
    args: dict[str, Any],
    call_id: str,
    tape_tool: str,
    via: str,
) -> EmittedCall:
    """A call of the code tool (``exec``) whose code calls ``nested`` with ``args``."""
    code = req.code_tool
    assert code is not None
    source = code_call(nested, args)
    return EmittedCall(
        call_id, code.name, "custom", {"input": source}, tape_tool, True, via, code.namespace
    )


def _describe(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else command
    return f"Run {first[:60]}"


# ---------------------------------------------------------------------- files


def _first(req: ModelRequest, names: tuple[str, ...]) -> OfferedTool | None:
    for name in names:
        tool = req.find_tool(name)
        if tool is not None and tool.kind == "function":
            return tool
    return None


def _read(call: ToolCall, req: ModelRequest, call_id: str) -> EmittedCall:
    path = str(call.args["path"])
    extras = {k: v for k, v in call.args.items() if k != "path"}
    tool = _first(req, READ_TOOLS)
    if tool is not None:
        out = {_key(tool, PATH_KEYS, "file_path"): _path_for(tool, req, path), **extras}
        _fill_required(tool, out, description=f"Read {path}")
        return EmittedCall(call_id, tool.name, tool.kind, out, call.tool, True)
    if _can_shell(req):
        return _shell({"command": f"cat -- {shlex.quote(path)}"}, req, call_id, call.tool, "shell")
    return EmittedCall(call_id, call.tool, "function", dict(call.args), call.tool, False)


def _write(call: ToolCall, req: ModelRequest, call_id: str) -> EmittedCall:
    path = str(call.args["path"])
    content = str(call.args["content"])
    extras = {k: v for k, v in call.args.items() if k not in ("path", "content")}
    tool = _first(req, WRITE_TOOLS)
    if tool is not None:
        out = {
            _key(tool, PATH_KEYS, "file_path"): _path_for(tool, req, path),
            _key(tool, CONTENT_KEYS, "content"): content,
            **extras,
        }
        _fill_required(tool, out, description=f"Write {path}")
        return EmittedCall(call_id, tool.name, tool.kind, out, call.tool, True)
    if _can_shell(req):
        return _shell({"command": write_command(path, content)}, req, call_id, call.tool, "shell")
    patch_tool = req.find_tool("apply_patch")
    if patch_tool is not None:
        patch = _add_file_patch(path, content)
        return EmittedCall(
            call_id,
            patch_tool.name,
            patch_tool.kind,
            {"input": patch},
            call.tool,
            True,
            "apply_patch",
        )
    return EmittedCall(call_id, call.tool, "function", dict(call.args), call.tool, False)


def write_command(path: str, content: str) -> str:
    """A shell command writing exactly ``content`` to ``path`` (a heredoc when it can)."""
    target = shlex.quote(path)
    parent = posixpath.dirname(path)
    prefix = f"mkdir -p {shlex.quote(parent)} && " if parent not in ("", ".", "/") else ""
    lines = content.splitlines()
    if content.endswith("\n") and "\r" not in content:
        delimiter = "AXIS_EOF"
        while delimiter in lines:
            delimiter += "_"
        return f"{prefix}cat > {target} <<'{delimiter}'\n{content}{delimiter}\n"
    return f"{prefix}printf '%s' {shlex.quote(content)} > {target}"


def _add_file_patch(path: str, content: str) -> str:
    body = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n"


def _key(tool: OfferedTool, candidates: tuple[str, ...], default: str) -> str:
    props = tool.properties
    return next((k for k in candidates if k in props), default)


def _path_for(tool: OfferedTool, req: ModelRequest, path: str) -> str:
    """Make ``path`` absolute when the tool asks for absolute paths and the cwd is known."""
    if path.startswith("/"):
        return path
    key = _key(tool, PATH_KEYS, "file_path")
    prop = tool.properties.get(key)
    described = str(prop.get("description", "")) if isinstance(prop, dict) else ""
    if key == "absolute_path" or "absolute" in described.lower():
        cwd = working_directory(req)
        if cwd:
            return posixpath.normpath(posixpath.join(cwd, path))
    return path


def working_directory(req: ModelRequest) -> str | None:
    """The agent's working directory when its prompt reveals it."""
    texts = list(req.system)
    for entry in req.entries:
        if entry.is_call:
            break
        if entry.text:
            texts.append(entry.text)
    for text in texts:
        for pattern in _CWD_PATTERNS:
            found = pattern.search(text)
            if found and found.group(1).startswith("/"):
                return found.group(1).rstrip("/") or "/"
    return None


def _fill_required(tool: OfferedTool, out: dict[str, Any], *, description: str) -> None:
    """Give required properties the tape left out a minimal value."""
    props = tool.properties
    for name in tool.required:
        if name in out:
            continue
        if name == "description":
            out[name] = description
        else:
            out[name] = smallest_value(props.get(name, {"type": "string"}))


# ---------------------------------------------------------------------- exact names


def _find_exact(tools: list[OfferedTool], want: str, *, loose: bool) -> OfferedTool | None:
    """The tool named ``want``: its full name (``mcp__fake__echo``); with ``loose``, also a
    suffix of it after a separator (``echo``), any suffix, or the name in another case."""
    tool = next((t for t in tools if t.full_name == want), None)
    if tool is not None or not loose:
        return tool
    for sep in ("__", ".", "/", ":", "_", "-"):
        for candidate in tools:
            if candidate.full_name.endswith(sep + want):
                return candidate
    for candidate in tools:
        if candidate.full_name.endswith(want):
            return candidate
    lowered = want.lower()
    return next((t for t in tools if t.full_name.lower() == lowered), None)


def _deferred(req: ModelRequest, want: str) -> tuple[str, str] | None:
    """``(namespace, name)`` for a tool of a namespace the agent defers: ``mcp__fake__echo``
    with ``mcp__fake`` deferred, or a bare ``echo`` when exactly one MCP server is deferred
    (the server cannot see a deferred namespace's tools, so it trusts the name)."""
    for namespace in sorted(req.deferred, key=len, reverse=True):
        prefix = namespace + "__"
        if want.startswith(prefix) and len(want) > len(prefix):
            return namespace, want[len(prefix) :]
    servers = [n for n in req.deferred if n.startswith("mcp__")]
    if len(servers) == 1 and "__" not in want:
        return servers[0], want
    return None


def _custom_input(args: dict[str, Any]) -> str:
    value = args.get("input")
    if isinstance(value, str):
        return value
    strings = [v for v in args.values() if isinstance(v, str)]
    return strings[0] if len(args) == 1 and strings else canonical_json(args)


def _exact(call: ToolCall, req: ModelRequest, call_id: str) -> EmittedCall:
    want = call.tool
    tool = _find_exact(req.tools, want, loose=False)
    nested = None if tool is not None else _find_exact(req.nested, want, loose=False)
    if tool is None and nested is None:
        tool = _find_exact(req.tools, want, loose=True)
        nested = None if tool is not None else _find_exact(req.nested, want, loose=True)
    if nested is not None:
        args = {"input": _custom_input(call.args)} if nested.kind == "custom" else dict(call.args)
        return _through_code(req, nested, args, call_id, want, "exec")
    if tool is None:
        deferred = _deferred(req, want)
        if deferred is not None:
            namespace, name = deferred
            return EmittedCall(
                call_id, name, "function", dict(call.args), want, True, "deferred", namespace
            )
        return EmittedCall(call_id, want, "function", dict(call.args), want, False)
    if tool.kind == "custom":
        args = {"input": _custom_input(call.args)}
        return EmittedCall(call_id, tool.name, "custom", args, want, True, None, tool.namespace)
    if tool.kind == "local_shell":
        command = call.args.get("command", "")
        argv = command if isinstance(command, list) else ["bash", "-lc", str(command)]
        return EmittedCall(call_id, tool.name, "local_shell", {"command": argv}, want, True)
    return EmittedCall(
        call_id, tool.name, "function", dict(call.args), want, True, None, tool.namespace
    )
