"""The limits every config and scenario file is held to, and the one check of a parsed value.

A file is hostile input: it may be huge, nested past any parser's stack, hold a number no
``int`` → ``str`` conversion accepts, or (YAML) multiply a few lines into billions of
values through aliases. Each limit below turns such a file into a :class:`ConfigError`
naming it, before any validator, walk or serializer sees the value. The numbers are
documented in docs/configuration.md ("Limits on input files").
"""

from __future__ import annotations

from typing import Any

from axis_eval.errors import ConfigError

MAX_FILE_BYTES = 1024 * 1024
"""1 MiB: the largest config or scenario file read (a hand-written file is a few KiB)."""
MAX_DEPTH = 100
"""Objects and lists nested at most this deep (a real file nests under 10). Well inside
Python's recursion limit for every parser and walker that follows."""
MAX_VALUES = 100_000
"""Values a file may hold, mapping keys included, each counted once per place it appears
(so a YAML alias counts its whole value again): what bounds validating and walking it."""
MAX_TEXT_CHARS = 4 * MAX_FILE_BYTES
"""Characters of text a file may hold, counted the same way: what bounds serializing it."""
MAX_INT_DIGITS = 4300
"""Digits of the longest integer (Python's own limit for converting an ``int`` to text)."""
NODE_TIMEOUT_S = 30.0
"""How long Node may take to evaluate a ``.js`` config or scenario."""
MAX_NODE_OUTPUT_BYTES = MAX_TEXT_CHARS
"""The most JSON a ``.js`` file's default export may serialize to."""

LIMITS_HINT = 'see "Limits on input files" in docs/configuration.md'

_INT_BOUND = 10**MAX_INT_DIGITS
_CONTAINERS = (dict, list, tuple, set, frozenset)


class _TooLarge(Exception):
    """One limit was passed: the message's tail, after "{kind} file {path} "."""


def check_value(value: Any, path: object, kind: str) -> None:
    """Raise a :class:`ConfigError` naming ``path`` if ``value`` passes a limit above.

    Iterative, and each shared object (a YAML anchor) is measured once and its sizes
    reused, so the check itself costs the distinct values, never their expansion.

    Raises:
        ConfigError: too deep, too many values or characters, a too-long integer, or a
            value that contains itself (a recursive YAML alias).
    """
    try:
        _measure(value)
    except _TooLarge as exc:
        raise ConfigError(f"{kind} file {path} {exc}", hint=LIMITS_HINT) from None


def json_within_limits(text: str) -> bool:
    """Whether JSON ``text`` (already parsed, so well-formed and its integers bounded by
    the parser) is too small to pass any limit, so :func:`check_value` need not walk it.

    Every value, mapping keys included, takes at least one character (JSON has no
    aliases), so a text of at most :data:`MAX_VALUES` characters holds at most that many
    values and far fewer than :data:`MAX_TEXT_CHARS` characters of text; and every level
    of nesting opens with a bracket, so at most :data:`MAX_DEPTH` brackets (those in
    strings counted too) nest at most that deep. A hand-written scenario passes at the
    cost of two ``str.count`` calls; anything else is walked.
    """
    return len(text) <= MAX_VALUES and text.count("[") + text.count("{") <= MAX_DEPTH


def _leaf(value: Any) -> int:
    """The characters a scalar counts for; raises for an integer past the digit limit."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_BOUND:
        raise _TooLarge(f"holds an integer of more than {MAX_INT_DIGITS:,} digits")
    return 0


def _items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [part for pair in value.items() for part in pair]
    return list(value)


class _Frame:
    """One container being measured: its children left, and the sizes summed so far."""

    __slots__ = ("children", "height", "index", "text", "value", "values")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.children = _items(value)
        self.index = 0
        self.values = 1
        self.text = 0
        self.height = 1

    def add(self, values: int, text: int, height: int) -> None:
        self.values += values
        self.text += text
        self.height = max(self.height, height + 1)
        if self.values > MAX_VALUES:
            raise _TooLarge(
                f"holds more than {MAX_VALUES:,} values (counting each YAML alias as the "
                "value it stands for)"
            )
        if self.text > MAX_TEXT_CHARS:
            raise _TooLarge(
                f"holds more than {MAX_TEXT_CHARS:,} characters of text (counting each "
                "YAML alias as the value it stands for)"
            )


def _measure(root: Any) -> None:
    if not isinstance(root, _CONTAINERS):
        _leaf(root)
        return
    done: dict[int, tuple[int, int, int]] = {}
    """id → (values, text, height) of each container measured (shared ones are reused)."""
    stack = [_Frame(root)]
    open_ids = {id(root)}
    while stack:
        frame = stack[-1]
        if frame.index == len(frame.children):
            stack.pop()
            open_ids.discard(id(frame.value))
            sizes = (frame.values, frame.text, frame.height)
            done[id(frame.value)] = sizes
            if stack:
                stack[-1].add(*sizes)
            continue
        child = frame.children[frame.index]
        frame.index += 1
        if not isinstance(child, _CONTAINERS):
            frame.add(1, _leaf(child), 0)
            continue
        known = done.get(id(child))
        if known is not None:
            if len(stack) + known[2] > MAX_DEPTH:
                raise _TooLarge(_too_deep())
            frame.add(*known)
            continue
        if id(child) in open_ids:
            raise _TooLarge("contains itself (a recursive YAML alias)")
        if len(stack) >= MAX_DEPTH:
            raise _TooLarge(_too_deep())
        stack.append(_Frame(child))
        open_ids.add(id(child))


def _too_deep() -> str:
    return f"is nested more than {MAX_DEPTH} levels deep (objects and lists inside each other)"
