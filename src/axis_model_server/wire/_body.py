"""Reading a request body's JSON the way every parser needs it: defensively.

Agents send odd shapes (a string where a list of parts is usual, ``null`` for an absent
field); a value of the wrong type reads as absent instead of failing the request, so a
new field or a client quirk degrades to "not offered" rather than to a 500.
"""

from __future__ import annotations

import json
from typing import Any

from axis_model_server.normalize import ModelRequest, OfferedTool, Role, canonical_json

__all__ = [
    "add_content",
    "as_dict",
    "as_list",
    "as_str",
    "call_args",
    "declared_tool",
    "flatten_text",
    "int_or_none",
    "openai_output_schema",
]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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


def add_content(req: ModelRequest, role: Role, content: Any) -> None:
    """Add a message's content: one string, or the text of each part of a list."""
    if isinstance(content, str):
        req.add_text(role, content)
        return
    for part in as_list(content):
        req.add_text(role, as_dict(part).get("text"))


def call_args(raw: Any) -> dict[str, Any]:
    """A tool call's arguments: a JSON object, or the JSON text of one (OpenAI sends the
    arguments as a string). Text that is not a JSON object is kept as ``{"input": ...}``;
    any other value reads as no arguments."""
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


def declared_tool(decl: dict[str, Any], schema: Any, **extra: Any) -> OfferedTool:
    """An offered tool from a declaration's ``name`` and ``description`` and ``schema``
    (kept only when it is a JSON object)."""
    return OfferedTool(
        name=as_str(decl.get("name")) or "",
        description=as_str(decl.get("description")) or "",
        schema=schema if isinstance(schema, dict) else None,
        **extra,
    )


def openai_output_schema(fmt: Any) -> dict[str, Any] | None:
    """A JSON-output request's schema from an OpenAI ``response_format``/``text.format``."""
    fmt = as_dict(fmt)
    kind = fmt.get("type")
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        inner = as_dict(fmt.get("json_schema")) or fmt
        return as_dict(inner.get("schema"))
    return None
