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
from importlib import resources

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
_RAW_OPEN = re.compile(r"<(script|style)\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"([^\s\"'=<>]+)\s*=\s*\"([^\"]*)$")
_URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "srcset"}


def _context(before: str, where: str) -> Callable[[object], str]:
    """The escaper of a slot, from the template text before it (see the module docstring)."""
    raw = list(_RAW_OPEN.finditer(before))
    if raw and f"</{raw[-1].group(1).lower()}" not in before[raw[-1].end() :].lower():
        return script_escape
    if before.rfind("<!--") > before.rfind("-->"):
        raise ValueError(f"{where}: a slot inside an HTML comment")
    tag_start = before.rfind("<")
    if tag_start <= before.rfind(">"):
        return escape  # between tags
    inside = before[tag_start:]
    if inside.count('"') % 2 == 0:
        raise ValueError(f"{where}: a slot outside a double-quoted attribute value")
    match = _ATTRIBUTE.search(inside)
    if match is None:
        raise ValueError(f"{where}: a slot in an attribute the loader cannot name")
    name, prefix = match.group(1).lower(), match.group(2)
    if name.startswith("on") or name == "style":
        raise ValueError(f"{where}: a slot in a {name} attribute")
    if name in _URL_ATTRIBUTES and not prefix.startswith("#"):
        raise ValueError(f"{where}: a {name} slot must follow a literal '#' (a fragment link)")
    return _attribute


class Template:
    """One fragment: literal text and the slots between, each with its escaper.

    Its slots are checked when it loads; it is compiled into a function that joins the
    literals and the escaped values in one call (the charts render thousands of small
    fragments per report) on its first render, so a small report pays only for the
    fragments it uses.
    """

    __slots__ = ("_count", "_fill", "_namespace", "_source", "name")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        namespace: dict[str, object] = {"S": _SPECIAL}
        pieces: list[str] = []
        names: set[str] = set()
        position = 0
        for n, match in enumerate(_SLOT.finditer(text)):
            slot = match.group(1)
            escaper = _context(text[: match.start()], f"{name}: {{{{{slot}}}}}")
            namespace[f"L{n}"], namespace[f"E{n}"] = text[position : match.start()], escaper
            if escaper is script_escape:
                pieces += [f"L{n}", f"E{n}(v[{slot!r}])"]
            else:  # a plain str with nothing to escape needs no call
                pieces += [
                    f"L{n}",
                    f"(X if type(X := v[{slot!r}]) is str and not S(X) else E{n}(X))",
                ]
            names.add(slot)
            position = match.end()
        namespace["T"] = text[position:]
        pieces.append("T")
        self._source = f"def fill(v):\n    return ''.join(({', '.join(pieces)},))"
        self._namespace = namespace
        self._fill: Callable[[Mapping[str, object]], str] | None = None
        self._count = len(names)

    def _compiled(self) -> Callable[[Mapping[str, object]], str]:
        exec(self._source, self._namespace)
        self._fill = fill = self._namespace["fill"]  # type: ignore[assignment]
        return fill  # type: ignore[return-value]

    def render(self, values: Mapping[str, object] | None = None, /, **more: object) -> Markup:
        """The fragment with every slot filled; a missing or unknown name is an error."""
        given = {**values, **more} if values is not None and more else values or more
        try:
            if len(given) == self._count:  # as many names as slots, and none missing below
                return Markup((self._fill or self._compiled())(given))
        except KeyError as missing:
            raise KeyError(f"template {self.name}: no value for {missing}") from None
        raise KeyError(f"template {self.name}: {len(given)} values for {self._count} slots")


_HEADER = re.compile(r"^\{#\s*(\w+)\s*#\}$")


def asset(name: str) -> str:
    """A file of ``assets/`` (package data: found in an installed package as in the tree)."""
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


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
    if "</script" in text.lower() or "</style" in text.lower() or "<!--" in text:
        raise ValueError(f"{name} contains a closing tag or a comment opener")
    return Markup(text)
