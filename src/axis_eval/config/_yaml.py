"""A YAML loader bounded for hostile files: nesting depth and integer length.

PyYAML's composer recurses once per nesting level, so a deeply nested file would end in a
``RecursionError``; its integer constructor converts any length of digits (a sexagesimal
``1:2:3:…`` of a megabyte takes minutes). Both are stopped here, with YAML's own error
type so the caller reports them as invalid YAML with a line and column. Alias expansion
is bounded after construction, by :func:`axis_eval.config._limits.check_value` (building
the shared values themselves costs only the distinct ones).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import Node, ScalarNode

from axis_eval.config._limits import MAX_DEPTH, MAX_INT_DIGITS


class BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses nesting past :data:`MAX_DEPTH` and long integers."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth += 1
        try:
            # A scalar sits one below its innermost list: MAX_DEPTH lists may hold one.
            # The exact limit, and its message, is then check_value's (as for JSON and TOML).
            if self._depth > MAX_DEPTH + 1:
                raise ComposerError(
                    None,
                    None,
                    f"nested more than {MAX_DEPTH} levels deep",
                    self.peek_event().start_mark,  # type: ignore[no-untyped-call]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        # PyYAML's scalar constructors trust the text a tag claims: `!!int ""` raises
        # IndexError, `2001-13-01` ValueError, `!!bool x` KeyError. Each becomes YAML's own
        # error, with the value's line and column.
        try:
            return super().construct_object(node, deep)
        except _CONSTRUCTOR_BUGS as exc:
            raise _unreadable(node, exc) from None


_CONSTRUCTOR_BUGS = (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError)


def _unreadable(node: Node, exc: Exception) -> ConstructorError:
    text = node.value if isinstance(node, ScalarNode) else ""
    shown = repr(text[:40] + ("..." if len(text) > 40 else ""))
    tag = str(node.tag).removeprefix("tag:yaml.org,2002:")
    reason = str(exc)[:200] if isinstance(exc, ValueError) else "not a valid value"
    return ConstructorError(None, None, f"cannot read {shown} as {tag}: {reason}", node.start_mark)


def _bounded_int(loader: yaml.SafeLoader, node: Node) -> Any:
    # Checked on the text, before PyYAML converts it: a decimal past the limit would fail in
    # int() (with advice to raise Python's limit), a megabyte sexagesimal would take minutes.
    if not isinstance(node, ScalarNode):
        raise ConstructorError(None, None, "an integer must be a scalar", node.start_mark)
    if len(node.value.replace("_", "").lstrip("+-")) > MAX_INT_DIGITS:
        raise ConstructorError(
            None, None, f"an integer of more than {MAX_INT_DIGITS:,} digits", node.start_mark
        )
    return loader.construct_yaml_int(node)


BoundedLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def load(text: str) -> Any:
    """The single document in ``text`` (``yaml.safe_load`` with the bounds above).

    Raises:
        yaml.YAMLError: the text is not YAML, or passes a bound.
    """
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    except _CONSTRUCTOR_BUGS as exc:  # raised past construct_object (in a collection's)
        raise yaml.YAMLError(f"cannot read a value: {str(exc)[:200]}") from None
    finally:
        loader.dispose()
