"""Make a value an agent printed as JSON safe to keep in a transcript.

``json.loads`` accepts things the rest of the pipeline cannot hold:

* lone surrogates, written as ``"\\ud800"`` escapes: a Python string keeps them, but no
  UTF-8 encoder does, so the transcript (``model_dump_json``) and the raw output could not
  be written at the end of the run;
* deep nesting: a value nested a few hundred levels deep parses, but pydantic's serializer
  gives up at about 250 levels and its JSON reader at 200, so such a tool input would make
  ``transcript.json`` unwritable or unreadable (and ``json.dumps`` on it can hit the
  recursion limit inside an adapter);
* numbers no count or cost can be: ``NaN``, ``1e400`` (read as infinity), ``10**4000``:
  ``int()`` of the first two raises, the last overflows the float arithmetic of a cost
  estimate.

:func:`scrub` replaces each lone surrogate with U+FFFD and each value nested deeper than
:data:`MAX_DEPTH` with the :data:`TOO_DEEP` marker, and says what it replaced so the caller
can warn; readers call it once per parsed line, before any adapter code sees the value
(the raw output keeps the line as printed). Numbers are each field's business: a token
count is believed up to :data:`MAX_COUNT`, a cost is read with :func:`finite_cost`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_COUNT", "MAX_DEPTH", "TOO_DEEP", "Scrubbed", "finite_cost", "scrub"]

MAX_DEPTH = 64
"""Levels of lists and objects kept; far more than any real event or tool input has, far
fewer than the ~200 levels the transcript's JSON reader accepts."""
TOO_DEEP = f"[nested deeper than {MAX_DEPTH} levels: left out]"
"""What replaces a value nested deeper than :data:`MAX_DEPTH`."""

MAX_COUNT = 2**53
"""The largest token count believed; anything larger is garbage (and ``10**4000`` tokens,
which JSON allows, would overflow the float arithmetic of a cost estimate)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class Scrubbed:
    """A scrubbed value and what had to be replaced in it."""

    value: Any
    surrogates: bool = False
    """Lone surrogates were replaced with U+FFFD."""
    too_deep: bool = False
    """Values nested deeper than :data:`MAX_DEPTH` were replaced with :data:`TOO_DEEP`."""

    def describe(self) -> str | None:
        """``lone surrogates replaced with U+FFFD; …`` or None when nothing was replaced."""
        parts: list[str] = []
        if self.surrogates:
            parts.append("lone surrogates (\\ud800-\\udfff) replaced with U+FFFD")
        if self.too_deep:
            parts.append(f"values nested deeper than {MAX_DEPTH} levels left out")
        return "; ".join(parts) or None


def scrub(value: Any) -> Scrubbed:
    """``value`` (as ``json.loads`` returns it) with lone surrogates and too-deep nesting
    replaced; containers are copied, anything else is returned as it is.

    Recursion stops at :data:`MAX_DEPTH`, so a value parsed at any depth is safe here.
    """
    out = Scrubbed(None)
    out.value = _walk(value, 0, out)
    return out


def _text(text: str, out: Scrubbed) -> str:
    if _SURROGATE.search(text) is None:
        return text
    out.surrogates = True
    return _SURROGATE.sub("\ufffd", text)


def _walk(value: Any, depth: int, out: Scrubbed) -> Any:
    if isinstance(value, str):
        return _text(value, out)
    if not isinstance(value, dict | list):
        return value
    if depth >= MAX_DEPTH:
        out.too_deep = True
        return TOO_DEEP
    if isinstance(value, list):
        return [_walk(item, depth + 1, out) for item in value]
    return {_text(str(k), out): _walk(v, depth + 1, out) for k, v in value.items()}


def finite_cost(value: Any) -> float | None:
    """A cost in US dollars from JSON: a finite non-negative number, else None (``NaN``;
    ``1e400``, which JSON reads as infinity; an integer too large for a float …)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None
