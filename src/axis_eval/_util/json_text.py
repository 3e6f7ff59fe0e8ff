"""JSON text as JavaScript's ``JSON.stringify`` writes it: the one measure of a tool call.

AXIS weighs every interaction by its context bytes: the UTF-8 size of its input's JSON text
(``JSON.stringify``, compact) plus its result text. Python's ``json.dumps`` writes ``", "``
and ``": "`` between items and its own number forms, so the same input weighed more here
(a 2,041-byte ``Write`` input with a 25-byte result: 2,066 bytes in AXIS, 2,069 with
``json.dumps``). Every place that sizes a tool's input or output (the transcript builder,
the ACP transcript, the sparse index) and the live token estimate's count of tool text goes
through :func:`context_text` / :func:`context_bytes`, so the measure is one rule.

What ``JSON.stringify`` does, and so what :func:`json_text` does:

- no spaces: ``{"a":1,"b":[1,2]}``; text as it is (no ``\\uXXXX`` for non-ASCII), with
  ``"``, ``\\``, and the control characters escaped (``\\n``, ``\\u0001`` …);
- numbers as JavaScript prints them: ``1.0`` is ``1``, ``1e16`` is ``10000000000000000``,
  ``1e21`` is ``1e+21``, ``1.5e-05`` is ``0.000015``; ``NaN`` and infinities are ``null``;
  ``-0.0`` is ``0``; an integer past 2**53 is the nearest double (JavaScript reads every
  number as one), and one past the doubles' range is ``null`` (JavaScript's ``Infinity``);
- key order: keys that are array indices (``"0"``, ``"17"``) first, in numeric order, then
  the others as inserted (JavaScript's own-property order);
- an unpaired surrogate as ``\\udXXX`` (ES2019's well-formed ``JSON.stringify``).

Beyond what parsed JSON holds: tuples are lists, a non-string key is the text JavaScript
would make of it (``1`` → ``"1"``, ``None`` → ``"null"``), other objects are their
``str()``. The walk is iterative, so no nesting depth raises ``RecursionError``; a
container holding itself raises ``ValueError`` (as ``json.dumps`` does).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from json.encoder import encode_basestring as _encode_string  # json.dumps's, C-accelerated
from typing import Any

__all__ = ["context_bytes", "context_text", "json_text"]

_MAX_SAFE_INT = 2**53
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE_ESCAPES = {code: f"\\u{code:04x}" for code in range(0xD800, 0xE000)}
"""An unpaired surrogate → its escape (``str.translate``: C speed, however many there are)."""
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_INDEX = 2**32 - 2
"""The largest array index (a key that JavaScript orders first)."""


class _Text(str):
    """Text to write as it is (a bracket, a separator and key), not a value to encode."""

    __slots__ = ()


class _Close:
    """A container's closing bracket; writing it leaves the container."""

    __slots__ = ("ident", "text")

    def __init__(self, text: str, ident: int) -> None:
        self.text = text
        self.ident = ident


def json_text(value: Any) -> str:
    """``value`` as ``JSON.stringify(value)`` writes it (see the module's notes)."""
    fast = _plain_text(value)
    return fast if fast is not None else _walk(value)


def _plain_text(value: Any) -> str | None:
    """``json.dumps``'s compact text when it is already ``JSON.stringify``'s, else None.

    The common input (objects of strings and small integers) needs nothing of
    :func:`_walk`, and the C encoder writes it many times faster: only its strings may
    still hold an unpaired surrogate, which the text shows.
    """
    if not _is_plain(value):
        return None
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested too deep
        return None
    return text if text.isascii() or not _has_surrogate(text) else None


def _is_plain(value: Any) -> bool:
    """Whether ``value`` holds only lists, objects with keys that are no array index,
    strings, booleans, None and integers within 2**53 (no float, no other type). Each
    container is looked at once: one seen again (shared, or holding itself) is not plain."""
    seen: set[int] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if -_MAX_SAFE_INT <= item <= _MAX_SAFE_INT:
                continue
            return False
        if kind is not dict and kind is not list:
            return False
        if id(item) in seen:
            return False
        seen.add(id(item))
        if kind is dict:
            for key in item:
                if type(key) is not str or _INDEX_KEY.fullmatch(key):
                    return False
            todo.extend(item.values())
        else:
            todo.extend(item)
    return True


def _walk(value: Any) -> str:
    """JSON text the long way: every value as JavaScript writes it, without recursion."""
    out: list[str] = []
    inside: set[int] = set()
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is _Text:
            out.append(item)
        elif kind is _Close:
            inside.discard(item.ident)
            out.append(item.text)
        elif isinstance(item, str):
            out.append(_string(item))
        elif item is None:
            out.append("null")
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, int):
            out.append(_integer(item))
        elif isinstance(item, float):
            out.append(_number(item))
        elif isinstance(item, dict):
            _open(item, "{", "}", _members(item), inside, todo, out)
        elif isinstance(item, list | tuple):
            _open(item, "[", "]", _elements(item), inside, todo, out)
        else:
            out.append(_string(str(item)))
    return "".join(out)


def context_text(value: Any) -> str:
    """The text a tool's input or output stands for: a string as it is, nothing for None,
    anything else its :func:`json_text`."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json_text(value)
    except ValueError:  # a container holding itself: no JSON text exists
        return str(value)


def context_bytes(value: Any) -> int:
    """The UTF-8 size of :func:`context_text` (an unpaired surrogate in a string counts 3
    bytes, as JavaScript's ``TextEncoder`` writes U+FFFD for it)."""
    text = context_text(value)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _open(
    container: Any,
    opening: str,
    closing: str,
    items: Iterable[tuple[str, Any]],
    inside: set[int],
    todo: list[Any],
    out: list[str],
) -> None:
    """Write a container's opening and queue its items (each after its own prefix text)."""
    ident = id(container)
    if ident in inside:
        raise ValueError("Circular reference detected")
    pending: list[Any] = []
    for prefix, item in items:
        pending.append(_Text(("," if pending else "") + prefix))
        pending.append(item)
    if not pending:
        out.append(opening + closing)
        return
    inside.add(ident)
    out.append(opening)
    todo.append(_Close(closing, ident))
    todo.extend(reversed(pending))


def _elements(items: list[Any] | tuple[Any, ...]) -> Iterable[tuple[str, Any]]:
    return (("", item) for item in items)


def _members(mapping: dict[Any, Any]) -> list[tuple[str, Any]]:
    """``"key":`` and value pairs, array-index keys first in numeric order (JavaScript)."""
    indexed: list[tuple[int, str, Any]] = []
    named: list[tuple[str, Any]] = []
    for key, item in mapping.items():
        name = _key(key)
        if _INDEX_KEY.fullmatch(name) and int(name) <= _MAX_INDEX:
            indexed.append((int(name), name, item))
        else:
            named.append((name, item))
    indexed.sort(key=lambda entry: entry[0])
    ordered = [(name, item) for _, name, item in indexed] + named
    return [(_string(name) + ":", item) for name, item in ordered]


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return _integer(key)
    if isinstance(key, float):
        return _number(key)
    return str(key)


def _string(text: str) -> str:
    encoded: str = _encode_string(text)
    if encoded.isascii() or not _has_surrogate(encoded):
        return encoded
    return _SURROGATE_PAIR.sub(_pair, encoded).translate(_SURROGATE_ESCAPES)


def _has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point (the codec finds one at C speed)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _pair(match: re.Match[str]) -> str:
    """A high and a low half next to each other: JavaScript sees one character."""
    return match.group().encode("utf-16", "surrogatepass").decode("utf-16")


def _integer(value: int) -> str:
    if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return str(value)
    try:
        return _number(float(value))  # JavaScript holds it as the nearest double
    except OverflowError:
        return "null"  # past the doubles: Infinity, which JSON.stringify writes as null


def _number(value: float) -> str:
    """ECMAScript ``Number::toString`` of a double, from Python's shortest round-trip
    digits (``repr``; both pick the shortest digits that read back as the same double)."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"  # -0 too
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    power = point - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if power >= 0 else '-'}{abs(power)}"
