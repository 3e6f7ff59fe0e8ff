"""The shared vocabulary in ``axis_eval._types``."""

from __future__ import annotations

import string

from hypothesis import given, strategies as st
from pydantic.alias_generators import to_camel

from axis_eval._types import camel

_NAMES = st.text(alphabet=string.ascii_letters + string.digits + "_", max_size=24)
_WORDS = st.lists(st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8), min_size=1)


@given(_NAMES)
def test_camel_is_exactly_pydantics_rule_on_any_identifier(name: str) -> None:
    assert camel(name) == to_camel(name)


@given(_WORDS)
def test_camel_is_exactly_pydantics_rule_on_plain_words(words: list[str]) -> None:
    name = "_".join(words)  # the fast path: every model field but a few
    assert camel(name) == to_camel(name)


def test_camel_on_the_names_the_formats_use() -> None:
    assert camel("cache_read_input") == "cacheReadInput"
    assert camel("p95_ms") == to_camel("p95_ms")
    assert camel("_private") == to_camel("_private")
    assert camel("a__b") == to_camel("a__b")
