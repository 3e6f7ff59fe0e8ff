"""Turn pydantic validation errors and unknown keys into readable problems."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from datetime import date, time, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError

from axis_eval.config._base import InputModel
from axis_eval.config.actions import ACTION_NAMES, MCP_TYPES
from axis_eval.errors import FieldProblem

_SHOWN = 60
"""The longest rendering of a found value."""

_EXPECTED = {
    "missing": "a value (this field is required)",
    "string_type": "a string",
    "string_too_short": "a non-empty string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "an object (mapping)",
    "model_type": "an object (mapping)",
    "model_attributes_type": "an object (mapping)",
    "too_short": "a non-empty list",
}


def describe(value: Any) -> str:
    """A short rendering of a found value: JSON-like, cut to 60 characters.

    The value is rendered piece by piece and the rendering stops once it is long enough,
    so a huge (or, through YAML aliases, exponentially shared) value costs its first 60
    characters, never a full serialization.
    """
    if isinstance(value, dict):
        return "an object"
    text = ""
    for piece in _pieces(value):
        text += piece
        if len(text) > _SHOWN:
            return text[: _SHOWN - 3] + "..."
    return text


def _pieces(value: Any) -> Iterator[str]:
    """The JSON-like text of ``value``, a few characters at a time (lazily, so the caller
    can stop early; every opening bracket is a piece, so the nesting entered is bounded by
    what the caller reads)."""
    if isinstance(value, list | tuple):
        yield "["
        for index, item in enumerate(value):
            yield ", " if index else ""
            yield from _pieces(item)
        yield "]"
    elif isinstance(value, dict):
        yield "{"
        for index, (key, item) in enumerate(value.items()):
            yield ", " if index else ""
            yield json.dumps(key[: _SHOWN + 1]) if isinstance(key, str) else f'"{_scalar(key)}"'
            yield ": "
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, str):
        yield json.dumps(value[: _SHOWN + 1])  # escapes NUL, bidi marks and lone surrogates
    else:
        yield _scalar(value)


def _scalar(value: Any) -> str:
    if value is None or isinstance(value, bool | float):
        return json.dumps(value)
    if isinstance(value, int):
        if abs(value) < 10**_SHOWN:
            return str(value)
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    if isinstance(value, bytes | bytearray):
        return repr(bytes(value[: _SHOWN + 1]))
    if isinstance(value, date | time | timedelta):
        return repr(value)
    return f"a {type(value).__name__}"  # never repr(): an object's may be unbounded


def path_of(loc: tuple[str | int, ...]) -> str:
    """``('agents', 1, 'model')`` → ``agents[1].model``; union tags (``<…>``) are dropped."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif (part.startswith("<") and part.endswith(">")) or part.startswith(
            ("function-", "json-or-python")
        ):
            continue
        else:
            part = _short(part)
            out += f".{part}" if out else part
    return out


def _short(key: str) -> str:
    """A user's key as shown in a field path: a 1 MiB key is cut, not printed whole."""
    return key if len(key) <= _SHOWN else key[: _SHOWN - 3] + "..."


def _expected(err: Any) -> tuple[str, str | None]:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    found: str | None = None if kind == "missing" else describe(value)
    if kind == "axis_action" and isinstance(value, dict):
        action = value.get("action")
        hint = _suggest(action, ACTION_NAMES) if isinstance(action, str) else ""
        return f"an action of {' or '.join(ACTION_NAMES)}{hint}", describe(action)
    if kind == "axis_mcp_type" and isinstance(value, dict):
        return f"a `type` of {' or '.join(MCP_TYPES)}", describe(value.get("type"))
    if kind.startswith("axis_"):
        return err["msg"], found
    if kind in _EXPECTED:
        return _EXPECTED[kind], found
    if kind == "greater_than":
        return f"a number greater than {ctx.get('gt')}", found
    if kind == "greater_than_equal":
        return f"a number of at least {ctx.get('ge')}", found
    if kind == "literal_error":
        return f"one of {ctx.get('expected')}", found
    if kind == "string_pattern_mismatch":
        return f"text matching {ctx.get('pattern')}", found
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, "), found
    if kind == "assertion_error":
        return str(err["msg"]).removeprefix("Assertion failed, "), found
    return str(err["msg"]), found


MAX_PROBLEMS = 20
"""The most problems one error lists (a file with thousands of bad values lists the first
ones and says how many more there are)."""


def problems_from(error: ValidationError, prefix: str = "") -> list[FieldProblem]:
    """One problem per pydantic error (the first :data:`MAX_PROBLEMS`, then one saying how
    many more), with a field path and expected/found."""
    problems: list[FieldProblem] = []
    errors = error.errors(include_url=False)
    for err in errors[:MAX_PROBLEMS]:
        expected, found = _expected(err)
        path = path_of(tuple(err["loc"]))
        if prefix:
            path = f"{prefix}.{path}" if path else prefix
        # A required field missing because its key is misspelled: name the key, as the
        # unknown-key warning would (the warnings are never reached: validation failed).
        found = _misspelled(err, prefix) or found
        problems.append(FieldProblem(path=path, expected=expected, found=found))
    if len(errors) > MAX_PROBLEMS:
        more = len(errors) - MAX_PROBLEMS
        problems.append(FieldProblem(path=f"(and {more:,} more)", expected="the same kind of fix"))
    return problems


def closest(word: str, options: Iterable[str], n: int = 3) -> list[str]:
    """The ``n`` options nearest to a mistyped ``word`` (difflib), best first; case is
    ignored, the options are returned as spelled. Every name lookup of the package (agents,
    adapters, profiles, ``-s``/``-a`` filters, config keys) suggests from here."""
    if len(word) > _SHOWN:  # no name is that long; and difflib's cost grows with it
        return []
    import difflib  # only a lookup that failed needs it

    spelled: dict[str, str] = {}
    for option in options:
        spelled.setdefault(option.lower(), option)
    close = difflib.get_close_matches(word.lower(), list(spelled), n=n, cutoff=0.6)
    return [spelled[c] for c in close]


def did_you_mean(word: str, options: Iterable[str], n: int = 3) -> str:
    """``" (did you mean 'agents'?)"``, ``" (did you mean 'a' or 'b'?)"``, or ``""``."""
    close = closest(word, options, n)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)"


def _suggest(word: str, options: tuple[str, ...] | list[str]) -> str:
    return did_you_mean(word, options, n=1)


@functools.cache
def _every_field_name() -> frozenset[str]:
    """Every field name and alias of every input model: a key that is one of them is not
    taken for a misspelling of another field (conservative: no wrong "did you mean")."""
    names: set[str] = set()
    todo: list[type[BaseModel]] = [InputModel]
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        for name, field in model.model_fields.items():
            names.add(name)
            if field.alias:
                names.add(field.alias)
    return frozenset(names)


_NAMED = re.compile(r"`([A-Za-z_]+)`")
"""A field a model validator's message names (``a `prompt` (the task ...)``)."""


def _misspelled(err: Any, prefix: str) -> str | None:
    """For a required field that is missing: the unknown key beside it that looks like its
    misspelling, as ``unknown key 'agnets' (did you mean 'agents'?)``.

    The field is the missing one (pydantic's ``missing``), or one a model validator's
    message names in backticks and the object lacks (a scenario's `prompt`).
    """
    parent = err.get("input")
    loc = tuple(err.get("loc") or ())
    if not isinstance(parent, dict):
        return None
    if err["type"] == "missing" and loc and isinstance(loc[-1], str):
        fields, at = [loc[-1]], loc[:-1]
    elif err["type"] == "value_error":
        fields, at = [f for f in _NAMED.findall(str(err["msg"])) if f not in parent], loc
    else:
        return None
    known = _every_field_name()
    strays = [k for k in parent if isinstance(k, str) and k not in known]
    for field in fields:
        match = closest(field, strays, n=1)
        if match:
            where = ".".join(p for p in (prefix, path_of(at), _short(match[0])) if p)
            return f"unknown key {where!r} (did you mean {field!r}?)"
    return None


_ALIASES = {"judge": ("rubric",)}
"""Accepted spellings that are not field names (renamed before validation)."""

_INVENTED = {
    "criteria": ("judge", "judge"),
    "checks": ("judge", "judge"),
    "timeoutMinutes": ("limits", "limits.time_minutes"),
    "timeout": ("limits", "limits.time_minutes"),
    "maxTokens": ("limits", "limits.tokens"),
}
"""Field names authors invent (AXIS's configure-axis skill lists them): key → (field the
model must have, the suggestion)."""


def _known_names(model: BaseModel) -> list[str]:
    names: list[str] = []
    for field_name, field in type(model).model_fields.items():
        names.append(field.alias or field_name)
        names.extend(_ALIASES.get(field_name, ()))
    return names


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key).lstrip("_")


def _hint(key: str, model: BaseModel) -> str:
    known = _known_names(model)
    invented = _INVENTED.get(key)
    if invented and invented[0] in type(model).model_fields:
        return f" (did you mean {invented[1]!r}?)"
    if _snake(key) in known and _snake(key) != key:
        return f" (did you mean {_snake(key)!r}?)"
    return _suggest(key, known)


def unknown_keys(model: BaseModel, path: str = "") -> list[str]:
    """Warnings for keys no model knows, each with a "did you mean" hint when one is close.

    Each object is walked once, however often it is shared (a YAML anchor used a thousand
    times is one object): a shared object's unknown keys are reported at its first path.
    """
    return _unknown(model, path, set())


@functools.cache
def _field_order(model_type: type[BaseModel]) -> dict[str, int]:
    return {name: i for i, name in enumerate(model_type.model_fields)}


def _unknown(model: BaseModel, path: str, seen: set[int]) -> list[str]:
    found: list[str] = []
    for key in model.model_extra or {}:
        where = f"{path}.{_short(str(key))}" if path else _short(str(key))
        found.append(f"unknown key {where!r}{_hint(str(key), model)}")
    fields = type(model).model_fields
    order = _field_order(type(model))
    # Only the fields the file set can hold its keys (a default is the code's own value):
    # a scenario sets a handful of its ~40 fields. In declaration order, as before.
    for field_name in sorted(model.model_fields_set & order.keys(), key=order.__getitem__):
        field = fields[field_name]
        value = getattr(model, field_name)
        if not (isinstance(value, BaseModel) or (isinstance(value, list | dict) and value)):
            continue  # a scalar or an empty container holds no key (no path to format)
        shown = field.alias or field_name
        found.extend(_walk(value, f"{path}.{shown}" if path else shown, seen))
    return found


def _walk(value: Any, path: str, seen: set[int]) -> list[str]:
    if not isinstance(value, BaseModel | list | dict):
        return []
    if id(value) in seen:
        return []
    seen.add(id(value))
    if isinstance(value, BaseModel):
        return _unknown(value, path, seen)
    if isinstance(value, list):
        return [w for i, item in enumerate(value) for w in _walk(item, f"{path}[{i}]", seen)]
    return [w for k, item in value.items() for w in _walk(item, f"{path}.{_short(str(k))}", seen)]
