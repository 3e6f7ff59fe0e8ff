"""Rules for the text in a user's files: what any string, a folder name, a key and a variable
name may hold.

Strings from a config or scenario end up in file and folder names, environment variables,
argv and JSON. Two kinds of character pass a dry run and then crash the real run there: NUL
(``execve``, ``open`` and ``putenv`` refuse it) and an unpaired surrogate (``"\\udc80"`` in
JSON; no UTF-8 writer can encode it). So every string is checked for both at validation, and
names that become folders or variables are held to a stricter rule.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

MAX_COMPONENT_BYTES = 255
"""The longest file or folder name (bytes of UTF-8) Linux and macOS file systems accept."""

TEXT_ERROR = "axis_text"
"""The error type of a text problem; the config's messages show its message as "expected"."""

Loc = tuple[str | int, ...]


PROMPT_FIELDS = frozenset({"prompt"})
"""Free text that may hold NUL: a prompt goes to the agent over stdin (or in a file), where
NUL is a byte like any other; sent on a command line, that job fails cleanly before it
spawns (``execute/supervise_start.py``). Unpaired surrogates are refused there too."""


def text_problem(text: str, what: str = "text", *, nul: bool = False) -> str | None:
    """What no string may hold (NUL, unless ``nul``; an unpaired surrogate), or None."""
    if "\x00" in text and not nul:
        return f"{what} without NUL characters"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return f"{what} without unpaired surrogates (\\ud800-\\udfff are not valid Unicode)"
    return None


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in text)


def folder_name_problem(name: str) -> str | None:
    """What a name that becomes one folder (an agent's name) may not be, or None.

    One path component: no separators, no leading ``.`` (``.``, ``..`` and hidden folders),
    no control characters (a newline or an escape sequence in a folder name and on the
    terminal), at most 255 bytes.
    """
    if "/" in name or "\\" in name or name.startswith("."):
        return "a name without '/', '\\' or a leading '.' (it names a folder)"
    return _component_rest(name, "a name")


def _component_rest(part: str, what: str) -> str | None:
    if _has_control(part):
        return f"{what} without control characters (it names a folder)"
    if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        return f"{what} of at most {MAX_COMPONENT_BYTES} bytes (it names a folder)"
    return None


def scenario_key_problem(key: str) -> str | None:
    """What a scenario key (``dir/name``; each part becomes a folder) may not be, or None.

    Parts are separated by ``/``; none is empty, ``.`` or ``..``, holds ``\\`` or a control
    character, or is longer than 255 bytes. File-derived keys (relative paths) pass.
    """
    expected = "a key of '/'-separated names, none empty, '.' or '..' and without '\\'"
    for part in key.split("/"):
        if part in ("", ".", "..") or "\\" in part:
            return expected
        problem = _component_rest(part, "a key")
        if problem:
            return problem
    return None


def env_name_problem(name: str) -> str | None:
    """What an environment variable's name may not hold (``=``: ``execve`` refuses it)."""
    return "a variable name without '='" if "=" in name else None


def shown(key: str) -> str:
    """A mapping's ``key`` as a part of a printed field path: as is when plain, else quoted
    with NUL, controls and surrogates escaped (``flags."x\\u0000"``, ``adapters.".."``)."""
    if key and key.isprintable() and "." not in key and not any(c.isspace() for c in key):
        return key
    return json.dumps(key)


def problem_error(problems: list[tuple[Loc, Any, str]]) -> ValidationError:
    """One validation error for many ``(location, value, expected)`` problems.

    Raised inside a field validator, the locations are relative to that field: pydantic
    prefixes the field's own path, so each problem names the exact key or list item.
    """
    return ValidationError.from_exception_data(
        "text",
        [
            InitErrorDetails(type=PydanticCustomError(TEXT_ERROR, message), loc=loc, input=value)
            for loc, value, message in problems
        ],
    )


def bad_strings(value: Any, loc: Loc = (), *, nul: bool = False) -> Iterator[tuple[Loc, Any, str]]:
    """Every string in ``value`` (lists, dicts, their keys) that breaks :func:`text_problem`
    (a :data:`PROMPT_FIELDS` value, or the whole ``value`` with ``nul``, may hold NUL).

    Model instances (a value built in code, not read from a file) are not walked.
    """
    if isinstance(value, str):
        problem = text_problem(value, nul=nul)
        if problem:
            yield loc, value, problem
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from bad_strings(item, (*loc, index), nul=nul)
    elif isinstance(value, dict):
        for key, item in value.items():
            where = (*loc, shown(key) if isinstance(key, str) else str(key))
            problem = text_problem(key, "a key") if isinstance(key, str) else None
            if problem:
                yield where, key, problem
            yield from bad_strings(item, where, nul=nul or key in PROMPT_FIELDS)


def _clean_text(text: str, nul: bool = False) -> bool:
    return text_problem(text, nul=nul) is None


def _clean(value: Any, nul: bool = False) -> bool:
    """:func:`bad_strings` finds nothing: the fast path, a tight walk without locations
    (validating a scenario twice as slow was the cost of the located walk)."""
    if isinstance(value, str):
        return _clean_text(value, nul)
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and not _clean_text(key):
                return False
            if isinstance(item, str | list | tuple | dict) and not _clean(
                item, nul or key in PROMPT_FIELDS
            ):
                return False
    elif isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, str | list | tuple | dict) and not _clean(item, nul):
                return False
    return True


def check_strings(value: Any, *, nul: bool = False) -> Any:
    """A field validator's body: ``value`` unchanged, or every bad string in it reported
    (``nul``: the field is a :data:`PROMPT_FIELDS` one)."""
    if _clean(value, nul):
        return value
    raise problem_error(list(bad_strings(value, nul=nul)))


def check_keys(mapping: dict[str, Any], rule: Callable[[str], str | None]) -> None:
    """Report every key of ``mapping`` that ``rule`` (a ``*_problem`` function) rejects."""
    found: list[tuple[Loc, Any, str]] = [
        ((shown(key),), key, p) for key in mapping if (p := rule(key))
    ]
    if found:
        raise problem_error(found)
