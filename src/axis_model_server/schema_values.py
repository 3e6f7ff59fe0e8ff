"""The smallest value that fits a JSON Schema, for structured-output side requests."""

from __future__ import annotations

from typing import Any

__all__ = ["smallest_value"]

_MAX_DEPTH = 12


def smallest_value(schema: Any, _depth: int = 0) -> Any:
    """A minimal value valid for ``schema`` (a JSON Schema or a Gemini ``Schema``).

    Objects get their required properties (all properties when ``required`` is absent),
    arrays their minimum number of items, strings ``"ok"`` (padded to ``minLength``),
    numbers their minimum or 1, booleans ``false``; ``enum``/``const`` give their first
    value and ``anyOf``/``oneOf`` their first choice. Gemini's upper-case type names work.
    """
    if not isinstance(schema, dict) or _depth > _MAX_DEPTH:
        return "ok" if _depth == 0 and not isinstance(schema, dict) else None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf", "allOf"):
        choices = schema.get(key)
        if isinstance(choices, list) and choices:
            return smallest_value(choices[0], _depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), kind[0] if kind else None)
    kind = str(kind).lower() if kind is not None else ("object" if "properties" in schema else "")
    if kind == "object":
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = schema.get("required")
        keys = (
            [k for k in required if isinstance(k, str)]
            if isinstance(required, list)
            else list(props)
        )
        return {k: smallest_value(props.get(k, {"type": "string"}), _depth + 1) for k in keys}
    if kind == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and count > 0 else 0
        return [smallest_value(schema.get("items", {"type": "string"}), _depth + 1)] * count
    if kind in ("integer", "number"):
        for key in ("minimum", "exclusiveMinimum"):
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                value = bound + 1 if key == "exclusiveMinimum" else bound
                return int(value) if kind == "integer" else value
        return 1
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    length = schema.get("minLength")
    text = "ok"
    if isinstance(length, int) and length > len(text):
        text = text + "k" * (length - len(text))
    return text
