"""One protocol-neutral view of a model request, whatever wire protocol carried it.

Each parser turns a request body into a :class:`ModelRequest`: the system text, the
conversation as a flat list of :class:`Entry` (user text, assistant text, assistant tool
call, tool result, mid-conversation system text), the offered tools, and whether JSON
output was asked for. Answers and usage are computed from this view only, so the same
conversation gets the same answer and the same token counts on every protocol.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Entry",
    "ModelRequest",
    "OfferedTool",
    "canonical_json",
    "deferred_namespaces",
    "nested_tools",
    "parse_anthropic",
    "parse_chat",
    "parse_gemini",
    "parse_responses",
    "tokens_for",
]

Role = Literal["system", "user", "assistant", "tool"]


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: the text whose length usage is derived from."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tokens_for(text: str) -> int:
    """The token count of ``text``: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class Entry:
    """One item of a conversation: text of some role, or an assistant tool call."""

    role: Role
    text: str | None = None
    call_name: str | None = None
    call_args: dict[str, Any] | None = None

    @property
    def is_call(self) -> bool:
        return self.call_name is not None

    def canonical(self) -> dict[str, Any]:
        if self.call_name is not None:
            return {
                "role": self.role,
                "tool_call": {"name": self.call_name, "args": self.call_args},
            }
        return {"role": self.role, "text": self.text}


DEFAULT_NAMESPACE = "functions"
"""The Responses namespace that holds ordinary tools (Codex's ``additional_tools`` wrap
them in it); its tools are called by their bare names."""


def qualified_name(namespace: str | None, name: str) -> str:
    """A namespaced tool's full name: ``mcp__fake`` + ``echo`` is ``mcp__fake__echo``.

    Tools of no namespace or of the default ``functions`` namespace keep their name.
    """
    if not namespace or namespace == DEFAULT_NAMESPACE or name.startswith(namespace + "__"):
        return name
    return f"{namespace}__{name}"


@dataclass(frozen=True)
class OfferedTool:
    """A tool the requesting agent offers to the model."""

    name: str
    """The tool's own name (inside its namespace, if any)."""
    kind: str = "function"
    """``function``, ``custom`` (freeform text input, e.g. Codex's ``apply_patch``),
    ``local_shell``, or another provider tool type."""
    description: str = ""
    schema: dict[str, Any] | None = None
    namespace: str | None = None
    """The Responses ``namespace`` tool holding this one (Codex puts each MCP server's tools
    in ``mcp__<server>``); a call must name it. None for top-level tools and for the
    default ``functions`` namespace."""

    @property
    def full_name(self) -> str:
        """The name tapes use: ``mcp__fake__echo`` for ``echo`` in ``mcp__fake``."""
        return qualified_name(self.namespace, self.name)

    @property
    def properties(self) -> dict[str, Any]:
        props = (self.schema or {}).get("properties")
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        req = (self.schema or {}).get("required")
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

    def canonical(self) -> dict[str, Any]:
        return {
            "name": self.full_name,
            "description": self.description,
            "parameters": self.schema,
        }


@dataclass
class ModelRequest:
    """A model request in protocol-neutral form."""

    protocol: str
    model: str | None = None
    stream: bool = False
    system: list[str] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    tools: list[OfferedTool] = field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    """The schema of a structured-output request (``{"type": "object"}`` for any object)."""
    max_tokens: int | None = None
    deferred: list[str] = field(default_factory=list)
    """Tool namespaces the agent lists but does not send yet (Codex defers MCP servers'
    tools behind ``tool_search`` or its ``exec`` tool and names them in a ``<tools>`` text)."""
    code_tool: OfferedTool | None = None
    """A freeform tool that runs code calling other tools (Codex's ``exec``: JavaScript
    with the agent's tools on a global ``tools`` object), when one is offered."""
    nested: list[OfferedTool] = field(default_factory=list)
    """The tools :attr:`code_tool` declares (``exec_command``, ``apply_patch`` ...): reachable
    only through it. Their schemas are rebuilt from the TypeScript declarations."""

    def add_text(self, role: Role, text: Any) -> None:
        if isinstance(text, str) and text:
            if role == "system" and not any(e.role != "system" for e in self.entries):
                # System text before the conversation starts belongs to the system prompt.
                self.system.append(text)
            else:
                self.entries.append(Entry(role, text=text))

    def add_call(self, name: Any, args: Any) -> None:
        if not isinstance(args, dict):
            args = {"input": args} if args is not None else {}
        self.entries.append(Entry("assistant", call_name=str(name or ""), call_args=args))

    def add_tool(self, tool: OfferedTool) -> None:
        if tool.name:
            self.tools.append(tool)

    # ------------------------------------------------------------------ derived

    def canonical(self) -> dict[str, Any]:
        return {
            "system": "\n".join(self.system),
            "messages": [e.canonical() for e in self.entries],
            "tools": [t.canonical() for t in self.tools],
        }

    def input_tokens(self) -> int:
        """Tokens of the conversation, system text and tools (canonical JSON / 4)."""
        return tokens_for(canonical_json(self.canonical()))

    def turn_index(self) -> int:
        """How many tool-calling assistant turns the history already holds.

        A turn is a run of assistant entries not interrupted by user text or tool results
        (Responses lists each call as its own item; one turn may hold several calls).
        """
        turns = 0
        in_turn = False
        turn_has_call = False
        for entry in self.entries:
            if entry.role == "assistant":
                if not in_turn:
                    in_turn, turn_has_call = True, False
                if entry.is_call and not turn_has_call:
                    turn_has_call = True
                    turns += 1
            elif entry.role in ("user", "tool"):
                in_turn = False
        return turns

    def prompt_texts(self) -> list[str]:
        """The user texts before the model's first tool call, the latest first.

        Agents put context (environment, reminders) in user messages before the real
        prompt, so the latest user text before any tool call is usually the prompt.
        """
        texts: list[str] = []
        for entry in self.entries:
            if entry.is_call:
                break
            if entry.role == "user" and entry.text:
                texts.append(entry.text)
        return texts[::-1]

    def user_texts(self) -> list[str]:
        return [e.text for e in self.entries if e.role == "user" and e.text]

    def last_user_text(self) -> str:
        for entry in reversed(self.entries):
            if entry.role == "user" and entry.text:
                return entry.text
        return ""

    def find_tool(self, name: str) -> OfferedTool | None:
        """The offered tool whose full name is ``name``."""
        return next((t for t in self.tools if t.full_name == name), None)


# ---------------------------------------------------------------------- helpers


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def flatten_text(content: Any) -> str:
    """The text of a content value: a string, a list of text parts, or other JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [flatten_text(p) for p in content]
        return "\n".join(p for p in parts if p)
    if isinstance(content, dict):
        for key in ("text", "output", "content"):
            if isinstance(content.get(key), str):
                return str(content[key])
        if content.get("type") in ("image", "image_url", "input_image", "document"):
            return ""
    return canonical_json(content)


def _parse_args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _schema_of_format(fmt: Any) -> dict[str, Any] | None:
    """A JSON-output request's schema from an OpenAI ``response_format``/``text.format``."""
    fmt = _as_dict(fmt)
    kind = fmt.get("type")
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        inner = _as_dict(fmt.get("json_schema")) or fmt
        return _as_dict(inner.get("schema"))
    return None


# ---------------------------------------------------------------------- Anthropic


def parse_anthropic(body: dict[str, Any]) -> ModelRequest:
    """An Anthropic Messages request (``/v1/messages``, also ``count_tokens``)."""
    req = ModelRequest("anthropic", model=_str(body.get("model")), stream=bool(body.get("stream")))
    system = body.get("system")
    if isinstance(system, str):
        req.add_text("system", system)
    else:
        for block in _as_list(system):
            req.add_text("system", _as_dict(block).get("text"))
    for message in _as_list(body.get("messages")):
        message = _as_dict(message)
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            req.add_text("system", flatten_text(content))
            continue
        if role not in ("user", "assistant"):
            continue
        if isinstance(content, str):
            req.add_text(role, content)
            continue
        for block in _as_list(content):
            block = _as_dict(block)
            kind = block.get("type")
            if kind == "text":
                req.add_text(role, block.get("text"))
            elif kind in ("tool_use", "server_tool_use") and role == "assistant":
                req.add_call(block.get("name"), block.get("input"))
            elif kind == "tool_result":
                req.entries.append(Entry("tool", text=flatten_text(block.get("content"))))
    for tool in _as_list(body.get("tools")):
        tool = _as_dict(tool)
        schema = tool.get("input_schema")
        declared = tool.get("type")
        plain = isinstance(schema, dict) or declared in (None, "custom")
        req.add_tool(
            OfferedTool(
                name=_str(tool.get("name")) or "",
                kind="function" if plain else str(declared),
                description=_str(tool.get("description")) or "",
                schema=schema if isinstance(schema, dict) else None,
            )
        )
    output = _as_dict(body.get("output_format")) or _as_dict(
        _as_dict(body.get("output_config")).get("format")
    )
    if output.get("type") == "json_schema":
        req.json_schema = _as_dict(output.get("schema"))
    req.max_tokens = _int(body.get("max_tokens"))
    return req


# ---------------------------------------------------------------------- OpenAI Chat


def parse_chat(body: dict[str, Any]) -> ModelRequest:
    """An OpenAI Chat Completions request."""
    req = ModelRequest(
        "openai-chat", model=_str(body.get("model")), stream=bool(body.get("stream"))
    )
    for message in _as_list(body.get("messages")):
        message = _as_dict(message)
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            req.add_text("system", flatten_text(content))
        elif role == "user":
            if isinstance(content, str):
                req.add_text("user", content)
            else:
                for part in _as_list(content):
                    req.add_text("user", _as_dict(part).get("text"))
        elif role == "assistant":
            if isinstance(content, str):
                req.add_text("assistant", content)
            else:
                for part in _as_list(content):
                    req.add_text("assistant", _as_dict(part).get("text"))
            for call in _as_list(message.get("tool_calls")):
                call = _as_dict(call)
                if call.get("type") == "custom":
                    custom = _as_dict(call.get("custom"))
                    req.add_call(custom.get("name"), {"input": custom.get("input", "")})
                else:
                    fn = _as_dict(call.get("function"))
                    req.add_call(fn.get("name"), _parse_args(fn.get("arguments")))
            legacy = _as_dict(message.get("function_call"))
            if legacy:
                req.add_call(legacy.get("name"), _parse_args(legacy.get("arguments")))
        elif role in ("tool", "function"):
            req.entries.append(Entry("tool", text=flatten_text(content)))
    for tool in _as_list(body.get("tools")):
        tool = _as_dict(tool)
        if tool.get("type") == "custom":
            custom = _as_dict(tool.get("custom"))
            req.add_tool(
                OfferedTool(
                    name=_str(custom.get("name")) or "",
                    kind="custom",
                    description=_str(custom.get("description")) or "",
                )
            )
            continue
        fn = _as_dict(tool.get("function"))
        params = fn.get("parameters")
        req.add_tool(
            OfferedTool(
                name=_str(fn.get("name")) or "",
                description=_str(fn.get("description")) or "",
                schema=params if isinstance(params, dict) else None,
            )
        )
    for fn in _as_list(body.get("functions")):
        fn = _as_dict(fn)
        params = fn.get("parameters")
        req.add_tool(
            OfferedTool(
                name=_str(fn.get("name")) or "",
                description=_str(fn.get("description")) or "",
                schema=params if isinstance(params, dict) else None,
            )
        )
    req.json_schema = _schema_of_format(body.get("response_format"))
    req.max_tokens = _int(body.get("max_completion_tokens")) or _int(body.get("max_tokens"))
    return req


# ---------------------------------------------------------------------- OpenAI Responses


def parse_responses(body: dict[str, Any]) -> ModelRequest:
    """An OpenAI Responses request."""
    req = ModelRequest(
        "openai-responses", model=_str(body.get("model")), stream=bool(body.get("stream"))
    )
    req.add_text("system", body.get("instructions"))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in _as_list(items):
        item = _as_dict(item)
        kind = str(item.get("type") or ("message" if "role" in item else ""))
        if kind == "message":
            role = item.get("role")
            mapped: Role | None = (
                "system"
                if role in ("system", "developer")
                else "user"
                if role == "user"
                else "assistant"
                if role == "assistant"
                else None
            )
            if mapped is None:
                continue
            content = item.get("content")
            if isinstance(content, str):
                req.add_text(mapped, content)
            else:
                for part in _as_list(content):
                    req.add_text(mapped, _as_dict(part).get("text"))
        elif kind == "additional_tools":
            # Codex's code-mode models get their tools in the input, not in ``tools``.
            for tool in _flatten_response_tools(_as_list(item.get("tools"))):
                req.add_tool(_response_tool(tool))
        elif kind == "function_call":
            name = qualified_name(_str(item.get("namespace")), str(item.get("name") or ""))
            req.add_call(name, _parse_args(item.get("arguments")))
        elif kind == "custom_tool_call":
            name = qualified_name(_str(item.get("namespace")), str(item.get("name") or ""))
            req.add_call(name, {"input": item.get("input", "")})
        elif kind == "local_shell_call":
            action = _as_dict(item.get("action"))
            req.add_call("local_shell", {"command": action.get("command")})
        elif kind.endswith("_call_output"):
            req.entries.append(Entry("tool", text=flatten_text(item.get("output"))))
        elif kind.endswith("_call"):
            req.add_call(item.get("name") or kind, {k: v for k, v in item.items() if k == "action"})
    for tool in _flatten_response_tools(_as_list(body.get("tools"))):
        req.add_tool(_response_tool(tool))
    req.json_schema = _schema_of_format(_as_dict(body.get("text")).get("format"))
    req.max_tokens = _int(body.get("max_output_tokens"))
    req.deferred = deferred_namespaces(
        req.system + [e.text for e in req.entries if e.role == "system" and e.text]
    )
    for offered in req.tools:
        declared = nested_tools(offered.description) if offered.kind == "custom" else []
        if declared:
            req.code_tool, req.nested = offered, declared
            break
    return req


def _response_tool(tool: dict[str, Any]) -> OfferedTool:
    kind = str(tool.get("type") or "function")
    params = tool.get("parameters")
    namespace = _str(tool.get("namespace"))
    return OfferedTool(
        name=_str(tool.get("name")) or kind,
        kind=kind,
        description=_str(tool.get("description")) or "",
        schema=params if isinstance(params, dict) else None,
        namespace=None if namespace == DEFAULT_NAMESPACE else namespace,
    )


def _flatten_response_tools(tools: list[Any], namespace: str | None = None) -> list[dict[str, Any]]:
    """Responses tools with ``namespace`` tools opened up; each inner tool is tagged with
    its namespace's name."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        tool = _as_dict(tool)
        if tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            inner = _str(tool.get("name"))
            out.extend(_flatten_response_tools(tool["tools"], inner or namespace))
        elif tool:
            out.append({**tool, "namespace": namespace} if namespace else tool)
    return out


_DECLARATION = re.compile(
    r"declare const tools: \{\s*([A-Za-z_$][\w$]*)\((.*?)\): Promise<", re.DOTALL
)
_PROPERTY = re.compile(r"^\s*([A-Za-z_$][\w$]*)(\?)?\s*:\s*(.+?);?\s*$")
_LITERALS = re.compile(r'^\s*"[^"]*"(?:\s*\|\s*"[^"]*")*\s*$')


def nested_tools(description: str) -> list[OfferedTool]:
    """The tools a code-running tool's description declares.

    Codex's ``exec`` lists each tool it exposes to its JavaScript as
    ``declare const tools: { exec_command(args: { cmd: string; ... }): Promise<...>; };``.
    A declaration taking ``input: string`` is a freeform (``custom``) tool; one taking
    ``args: {...}`` gets a JSON schema with the declared properties.
    """
    found: list[OfferedTool] = []
    for match in _DECLARATION.finditer(description):
        name, params = match.group(1), match.group(2).strip()
        if any(t.name == name for t in found):
            continue
        head, _, body = params.partition(":")
        body = body.strip()
        if head.strip() != "args" and body == "string":
            found.append(OfferedTool(name=name, kind="custom"))
            continue
        found.append(OfferedTool(name=name, schema=_declared_schema(body)))
    return found


def _declared_schema(body: str) -> dict[str, Any]:
    """A JSON schema for a TypeScript object type ``{ a: string; b?: number; }``."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    inner = body.strip()
    if inner.startswith("{") and inner.endswith("}"):
        inner = inner[1:-1]
    depth = 0
    for line in inner.splitlines():
        if line.strip().startswith("//"):
            continue
        if depth == 0:
            found = _PROPERTY.match(line)
            if found:
                key, optional, kind = found.group(1), found.group(2), found.group(3)
                properties[key] = _declared_type(kind)
                if not optional:
                    required.append(key)
        depth += line.count("{") + line.count("<") - line.count("}") - line.count(">")
        depth = max(depth, 0)
    return {"type": "object", "properties": properties, "required": required}


def _declared_type(kind: str) -> dict[str, Any]:
    kind = kind.strip().rstrip(";").strip()
    if kind in ("string", "number", "boolean"):
        return {"type": kind}
    if kind.startswith("Array<") or kind.endswith("[]"):
        return {"type": "array"}
    if _LITERALS.match(kind):
        return {"type": "string", "enum": re.findall(r'"([^"]*)"', kind)}
    if kind.startswith("{"):
        return {"type": "object"}
    return {}


_DEFERRED = re.compile(r"Deferred tool namespaces:\s*\n((?:[ \t]*-[^\n]*\n?)+)")
_DEFERRED_ITEM = re.compile(r"^[ \t]*-[ \t]*`?([A-Za-z0-9_.\-]+)`?", re.MULTILINE)


def deferred_namespaces(texts: list[str]) -> list[str]:
    """The namespaces a Codex ``<tools>`` text lists as deferred (``- mcp__fake: ...``)."""
    found: list[str] = []
    for text in texts:
        for block in _DEFERRED.finditer(text):
            for name in _DEFERRED_ITEM.findall(block.group(1)):
                if name not in found:
                    found.append(name)
    return found


# ---------------------------------------------------------------------- Gemini


def parse_gemini(body: dict[str, Any], model: str | None, *, stream: bool) -> ModelRequest:
    """A Gemini ``generateContent`` / ``streamGenerateContent`` / ``countTokens`` request."""
    if isinstance(body.get("generateContentRequest"), dict):  # countTokens wraps the request
        body = body["generateContentRequest"]
    req = ModelRequest("gemini", model=model, stream=stream)
    system = body.get("systemInstruction") or body.get("system_instruction")
    if isinstance(system, str):
        req.add_text("system", system)
    else:
        for part in _as_list(_as_dict(system).get("parts")):
            req.add_text("system", _as_dict(part).get("text"))
    for content in _as_list(body.get("contents")):
        content = _as_dict(content)
        role = content.get("role") or "user"
        for part in _as_list(content.get("parts")):
            part = _as_dict(part)
            if part.get("thought") is True:
                continue
            call = part.get("functionCall") or part.get("function_call")
            response = part.get("functionResponse") or part.get("function_response")
            if isinstance(call, dict):
                req.add_call(call.get("name"), call.get("args"))
            elif isinstance(response, dict):
                req.entries.append(Entry("tool", text=flatten_text(response.get("response"))))
            elif "text" in part:
                req.add_text("assistant" if role == "model" else "user", part.get("text"))
    for tool in _as_list(body.get("tools")):
        tool = _as_dict(tool)
        decls = tool.get("functionDeclarations") or tool.get("function_declarations")
        for decl in _as_list(decls):
            decl = _as_dict(decl)
            params = decl.get("parametersJsonSchema") or decl.get("parameters")
            req.add_tool(
                OfferedTool(
                    name=_str(decl.get("name")) or "",
                    description=_str(decl.get("description")) or "",
                    schema=params if isinstance(params, dict) else None,
                )
            )
    config = _as_dict(body.get("generationConfig") or body.get("generation_config"))
    if config.get("responseMimeType") == "application/json" or config.get(
        "responseJsonSchema", config.get("responseSchema")
    ):
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        req.json_schema = schema if isinstance(schema, dict) else {"type": "object"}
    req.max_tokens = _int(config.get("maxOutputTokens"))
    return req


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
