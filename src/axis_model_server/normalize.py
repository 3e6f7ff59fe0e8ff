"""One protocol-neutral view of a model request, whatever wire protocol carried it.

Each protocol's parser (``wire/<protocol>.parse``) turns a request body into a
:class:`ModelRequest`: the system text, the conversation as a flat list of :class:`Entry`
(user text, assistant text, assistant tool call, tool result, mid-conversation system
text), the offered tools, and whether JSON output was asked for. Answers and usage are
computed from this view only, so the same conversation gets the same answer and the same
token counts on every protocol.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "DEFAULT_NAMESPACE",
    "Entry",
    "ModelRequest",
    "OfferedTool",
    "Role",
    "canonical_json",
    "qualified_name",
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
