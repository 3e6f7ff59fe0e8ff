"""The page's one escaping choke point: templates whose every slot escapes for where it sits.

All markup of the page lives in template files under ``assets/`` (``page.html``,
``charts.svg``); Python computes the values and fills the slots. A value never becomes markup
by being a ``str``: the only :class:`Markup` there is comes out of :meth:`Template.render`
(or is one of our own asset files), so one missed call cannot let agent output through.

Each ``{{name}}`` slot escapes for its context, which the loader works out once per template:

- text between tags: HTML-escaped; a :class:`Markup` (a rendered fragment) or a list of them
  is inserted as is;
- a quoted attribute value: HTML-escaped, a :class:`Markup` too (markup never belongs in an
  attribute); unquoted slots, slots in ``on…``/``style`` attributes and ``href``/``src``
  slots that do not follow a literal ``#`` are refused when the template loads;
- the text of ``<script>``/``<style>``: a :class:`Markup` (our own script and stylesheet) is
  inserted as is; anything else gets the JSON-in-script escape (``<``, ``>``, ``&``, U+2028,
  U+2029 as ``\\uXXXX``), so no data can close the element or open a comment.

``None`` in a slot is an error, not empty text (the page script's ``null`` bug, made
impossible here); a list of fragments is joined with nothing between. A file holds several
named fragments, each introduced by a line ``{# name #}`` (text before the first one is a
comment); a fragment's lines lose their leading indentation, blank lines around it are
dropped, and a line ending in ``\\`` continues on the next without a line break (a line
break is a space to HTML, and one between table cells is a text node per cell).

Chosen over jinja2 (which the issue allowed as the alternative): importing jinja2 and
compiling its templates would add to every ``axis run``'s fixed cost, since the run writes
this page at its end, and that cost is within a few milliseconds of its budget.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path

__all__ = [
    "EMPTY",
    "Markup",
    "Template",
    "asset",
    "escape",
    "fragments",
    "script_escape",
    "trusted_asset",
]


class Markup(str):
    """Text that already is HTML: made only by :meth:`Template.render` and
    :func:`trusted_asset` (our own script and stylesheet).

    Any ``str`` operation on it (``+``, slicing, ``format``) returns a plain ``str``, which a
    slot escapes again: a mistake shows as visible entities, never as live markup.
    """

    __slots__ = ()


EMPTY = Markup("")
"""An empty fragment, for an optional part that is absent."""

_SCRIPT_UNSAFE = ("<", ">", "&", "\u2028", "\u2029")
_SCRIPT_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in _SCRIPT_UNSAFE})


_SPECIAL = re.compile("[&<>\"']").search
"""Most slot values (numbers, class names) hold nothing to escape: they skip the replaces."""


def escape(value: object) -> str:
    """``value`` as HTML text (quotes included): a :class:`Markup` (or a list of them) as is."""
    if type(value) is str:  # exact types first: the common cases, without isinstance chains
        return html.escape(value, quote=True) if _SPECIAL(value) else value
    if type(value) is Markup:
        return value
    if type(value) is int or type(value) is float:
        return str(value)
    if isinstance(value, str):  # a str subclass other than Markup (a StrEnum): text
        return html.escape(str(value), quote=True)
    if isinstance(value, list | tuple):
        return "".join([escape(v) for v in value])
    raise TypeError(f"cannot put {type(value).__name__} into the page: {value!r}")


def _attribute(value: object) -> str:
    if type(value) is str or type(value) is Markup:  # a Markup too: attributes are text
        return html.escape(value, quote=True) if _SPECIAL(value) else value
    if type(value) is int or type(value) is float:
        return str(value)
    if isinstance(value, str):  # a str subclass (a StrEnum): text
        return html.escape(str(value), quote=True)
    raise TypeError(f"cannot put {type(value).__name__} into an attribute: {value!r}")


def script_escape(value: object) -> str:
    """Text for inside ``<script>``/``<style>``: JSON and base64 pass unchanged in meaning,
    but ``</script>`` and ``<!--`` cannot be formed (our own :class:`Markup` assets as is)."""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        # the scan is cheap (base64 payloads are megabytes and hold none); translate is not
        if any(c in value for c in _SCRIPT_UNSAFE):
            return value.translate(_SCRIPT_ESCAPES)
        return value
    raise TypeError(f"cannot put {type(value).__name__} into a script: {value!r}")


_SLOT = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_RAW = re.compile(r"<(script|style)\b[^>]*>|</(script|style)\b", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"([^\s\"'=<>]+)\s*=\s*\"([^\"]*)$")
_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "srcset"}


def _raw_spans(text: str) -> list[tuple[int, int]]:
    """Where ``<script>``/``<style>`` text runs: from after each open tag to its close (or
    the end), found in one pass so each slot's check is a lookup, not a rescan."""
    spans: list[tuple[int, int]] = []
    open_at: int | None = None
    for match in _RAW.finditer(text):
        if match.group(1) is not None and open_at is None:
            open_at = match.end()
        elif match.group(2) is not None and open_at is not None:
            spans.append((open_at, match.start()))
            open_at = None
    if open_at is not None:
        spans.append((open_at, len(text)))
    return spans


def _context(text: str, at: int, raw: list[tuple[int, int]], where: str) -> Callable[[object], str]:
    """The escaper of a slot at ``at`` in ``text`` (see the module docstring).

    Bounded searches on the whole text, not slices of it: a template's slots cost the
    length of their tag each, not of the text before them.
    """
    if any(start <= at <= end for start, end in raw):
        return script_escape
    if text.rfind("<!--", 0, at) > text.rfind("-->", 0, at):
        raise ValueError(f"{where}: a slot inside an HTML comment")
    tag_start = text.rfind("<", 0, at)
    if tag_start <= text.rfind(">", 0, at):
        return escape  # between tags
    if text.count('"', tag_start, at) % 2 == 0:
        raise ValueError(f"{where}: a slot outside a double-quoted attribute value")
    match = _ATTRIBUTE.search(text, tag_start, at)
    if match is None:
        raise ValueError(f"{where}: a slot in an attribute the loader cannot name")
    name, prefix = match.group(1).lower(), match.group(2)
    if name.startswith("on") or name == "style":
        raise ValueError(f"{where}: a slot in a {name} attribute")
    if name in _URL_ATTRIBUTES and not prefix.startswith("#"):
        raise ValueError(f"{where}: a {name} slot must follow a literal '#' (a fragment link)")
    return _attribute


_COMPILE_AFTER = 16
"""Renders of one fragment before it is compiled into a function: compiling costs a parse
(~0.2 ms), worth it only for the fragments a report renders many times (chart marks)."""


class Template:
    """One fragment: literal text and the slots between, each with its escaper.

    Its slots are checked when it loads. It renders by walking its parts; a fragment
    rendered more than a few times (the charts render thousands of small ones per report)
    is then compiled into one function that joins the literals and the escaped values in a
    single call, so a small report pays for no compilation at all.
    """

    __slots__ = ("_count", "_fill", "_parts", "_renders", "_tail", "name")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        raw = _raw_spans(text) if "<s" in text or "<S" in text else []
        parts: list[tuple[str, str, Callable[[object], str]]] = []
        position = 0
        for match in _SLOT.finditer(text):
            slot = match.group(1)
            escaper = _context(text, match.start(), raw, f"{name}: {{{{{slot}}}}}")
            parts.append((text[position : match.start()], slot, escaper))
            position = match.end()
        self._parts = parts
        self._tail = text[position:]
        self._count = len({slot for _, slot, _ in parts})
        self._fill: Callable[[Mapping[str, object]], str] | None = None
        self._renders = 0

    def _walk(self, values: Mapping[str, object]) -> str:
        out: list[str] = []
        for literal, slot, escaper in self._parts:
            value = values[slot]
            out.append(literal)
            # a plain str with nothing to escape needs no call (script text always does)
            if type(value) is str and escaper is not script_escape and not _SPECIAL(value):
                out.append(value)
            else:
                out.append(escaper(value))
        out.append(self._tail)
        return "".join(out)

    def _compiled(self) -> Callable[[Mapping[str, object]], str]:
        namespace: dict[str, object] = {"S": _SPECIAL, "T": self._tail}
        pieces: list[str] = []
        for n, (literal, slot, escaper) in enumerate(self._parts):
            namespace[f"L{n}"], namespace[f"E{n}"] = literal, escaper
            if escaper is script_escape:
                pieces += [f"L{n}", f"E{n}(v[{slot!r}])"]
            else:
                pieces += [
                    f"L{n}",
                    f"(X if type(X := v[{slot!r}]) is str and not S(X) else E{n}(X))",
                ]
        pieces.append("T")
        exec(f"def fill(v):\n    return ''.join(({', '.join(pieces)},))", namespace)
        self._fill = fill = namespace["fill"]  # type: ignore[assignment]
        return fill  # type: ignore[return-value]

    def render(self, values: Mapping[str, object] | None = None, /, **more: object) -> Markup:
        """The fragment with every slot filled; a missing or unknown name is an error."""
        given = {**values, **more} if values is not None and more else values or more
        try:
            if len(given) == self._count:  # as many names as slots, and none missing below
                if self._fill is not None:
                    return Markup(self._fill(given))
                self._renders += 1
                if self._renders > _COMPILE_AFTER:
                    return Markup(self._compiled()(given))
                return Markup(self._walk(given))
        except KeyError as missing:
            raise KeyError(f"template {self.name}: no value for {missing}") from None
        raise KeyError(f"template {self.name}: {len(given)} values for {self._count} slots")


_HEADER = re.compile(r"^\{#\s*(\w+)\s*#\}$")
_ASSETS = Path(__file__).with_name("assets")
_CLOSES_OR_COMMENTS = re.compile(r"</(?:script|style)|<!--", re.IGNORECASE).search


def asset(name: str) -> str:
    """A file of ``assets/`` (package data: found in an installed package as in the tree).

    Read beside this module, not through ``importlib.resources``, whose lookup costs more
    than the read: axis_eval is never imported from a zip.
    """
    return (_ASSETS / name).read_text(encoding="utf-8")


@cache
def fragments(file: str) -> dict[str, Template]:
    """The named fragments of a template file, loaded and checked once per process."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in asset(file).splitlines():
        header = _HEADER.match(line.strip())
        if header:
            current = found.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line.lstrip())
    return {
        name: Template(f"{file}#{name}", "\n".join(lines).strip("\n").replace("\\\n", ""))
        for name, lines in found.items()
    }


@cache
def trusted_asset(name: str) -> Markup:
    """Our own stylesheet or script, to be inlined as is.

    Raises:
        ValueError: the file could close its element (it is ours: a bug to fix there).
    """
    text = asset(name)
    if _CLOSES_OR_COMMENTS(text):  # a search, not a lowered copy of the whole file
        raise ValueError(f"{name} contains a closing tag or a comment opener")
    return Markup(text)
