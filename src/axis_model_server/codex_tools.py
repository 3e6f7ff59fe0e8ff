"""What Codex says about its tools in text rather than in a request's ``tools`` list.

Codex's code-mode ``exec`` tool describes the tools its JavaScript may call as TypeScript
declarations, and Codex lists the MCP namespaces it defers (sends later, behind
``tool_search`` or ``exec``) in a ``<tools>`` text. The Responses parser reads both here, so
a tape's ``shell`` or ``echo`` call can still find a tool the request does not list.
"""

from __future__ import annotations

import re
from typing import Any

from axis_model_server.normalize import OfferedTool

__all__ = ["deferred_namespaces", "nested_tools"]

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
