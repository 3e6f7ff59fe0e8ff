"""The one measure of tool text: JSON as JavaScript's ``JSON.stringify`` writes it.

AXIS sizes a tool call as ``new TextEncoder().encode(JSON.stringify(toolInput)).length``
(upstream ``test/unit/scoring/sparse-index.test.ts``, "contextBytes uses full toolInput when
available"); these tests pin ``axis_eval._util.json_text`` to what JavaScript writes.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import given, strategies as st

from axis_eval._util.json_text import _plain_text, _walk, context_bytes, context_text, json_text


def test_compact_separators_and_text_as_is() -> None:
    value = {"file_path": "/tmp/é.md", "content": 'a\nb\t"c"\\ \x01 \x7f \u2028 😀'}
    assert json_text(value) == (
        '{"file_path":"/tmp/é.md","content":"a\\nb\\t\\"c\\"\\\\ \\u0001 \x7f \u2028 😀"}'
    )
    assert json_text([1, [], {}, None, True, False, (2, 3)]) == "[1,[],{},null,true,false,[2,3]]"


def test_the_upstream_write_call_weighs_what_it_weighs_in_axis() -> None:
    """2,041 bytes of input (``json.dumps`` wrote 2,044) and a 25-byte result: 2,066."""
    tool_input = {"file_path": "/tmp/file.md", "content": "A" * 2000}
    assert context_bytes(tool_input) == 2_041
    assert len(json.dumps(tool_input)) == 2_044  # the old, spaced measure
    assert context_bytes(tool_input) + context_bytes("File created successfully") == 2_066


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (-2.0, "-2"),
        (0.5, "0.5"),
        (-0.0, "0"),
        (100.0, "100"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-5, "0.000015"),
        (0.1 + 0.2, "0.30000000000000004"),
        (5e-324, "5e-324"),
        (math.nan, "null"),
        (math.inf, "null"),
        (-math.inf, "null"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),  # JavaScript's nearest double
        (2**60, "1152921504606847000"),
        (10**400, "null"),  # past the doubles: Infinity
    ],
)
def test_numbers_are_written_as_javascript_prints_them(number: float, text: str) -> None:
    assert json_text(number) == text
    assert json_text({"n": number}) == '{"n":' + text + "}"


def test_array_index_keys_come_first_in_numeric_order() -> None:
    value = {"b": 1, "10": 2, "2": 3, "02": 4, "-1": 5, "4294967295": 6, "4294967294": 7}
    assert json_text(value) == ('{"2":3,"10":2,"4294967294":7,"b":1,"02":4,"-1":5,"4294967295":6}')
    assert json_text({None: "b", 1: "a", 2.5: "c"}) == '{"1":"a","null":"b","2.5":"c"}'


def test_unpaired_surrogates_are_escaped_and_pairs_joined() -> None:
    assert json_text(["\ud800", "a\udfffb", "\udc00\ud800", "\ud83d\ude00"]) == (
        '["\\ud800","a\\udfffb","\\udc00\\ud800","😀"]'
    )
    assert context_bytes("\ud800") == 3  # TextEncoder writes U+FFFD


def test_strings_and_none_stand_for_themselves() -> None:
    assert context_text("echo hi") == "echo hi" and context_bytes("é") == 2
    assert context_text(None) == "" and context_bytes(None) == 0


def test_any_depth_and_a_cycle() -> None:
    deep: list[Any] = []
    for _ in range(50_000):  # far past the recursion limit
        deep = [deep]
    assert json_text(deep) == "[" * 50_001 + "]" * 50_001
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json_text(loop)
    assert context_text(loop) == "[[...]]"
    shared = [1]
    assert json_text([shared, {"a": shared}]) == '[[1],{"a":[1]}]'  # shared, not circular


def test_other_objects_are_their_text() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert json_text({"x": Odd()}) == '{"x":"odd"}'


_KEYS = st.text(max_size=4) | st.sampled_from(["0", "7", "12", "01", "4294967295"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.fuzz
@given(_JSON)
def test_the_fast_path_writes_what_the_walk_writes(value: Any) -> None:
    fast = _plain_text(value)
    assert fast is None or fast == _walk(value)
    assert json_text(value) == _walk(value)


def _corpus(count: int) -> list[Any]:
    """JSON values with the hard parts: floats of every size, big integers, index keys,
    escapes and non-ASCII text (seeded: the same corpus every run)."""
    rng = random.Random(21)

    def number() -> float:
        pick = rng.random()
        if pick < 0.3:
            return rng.randint(-(10**6), 10**6)
        if pick < 0.4:
            return rng.randint(-(10**25), 10**25)
        if pick < 0.7:
            return rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30)
        return rng.choice([1.0, 0.1, 1e21, 1e-7, 1e-6, 123.0, 1e20, -2.5, 5e-324, 1e300])

    def text() -> str:
        return "".join(rng.choice('aé\n\x01"\\\u2028😀\x7f/<') for _ in range(rng.randint(0, 6)))

    def value(depth: int = 0) -> Any:
        pick = rng.random()
        if depth > 3 or pick < 0.4:
            return rng.choice([number, text, lambda: None, lambda: True])()
        if pick < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        keys = [rng.choice([text(), str(rng.randint(0, 20)), "01", "4294967295"]) for _ in "abc"]
        return {k: value(depth + 1) for k in keys}

    return [value() for _ in range(count)]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_node_writes_the_same_text() -> None:
    """The reference: Node's ``JSON.stringify`` of the same values, read back by
    ``JSON.parse`` (so a big integer is the double JavaScript holds)."""
    values = _corpus(1_500)
    script = (
        "const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(Boolean);"
        "for (const l of lines) console.log(JSON.stringify(JSON.stringify(JSON.parse(l))));"
    )
    stdin = "\n".join(json.dumps(v) for v in values)
    done = subprocess.run(
        ["node", "-e", script], input=stdin, capture_output=True, text=True, timeout=60, check=True
    )
    written = [json.loads(line) for line in done.stdout.split("\n") if line]
    assert len(written) == len(values)
    mismatches = [(v, w) for v, w in zip(values, written, strict=True) if json_text(v) != w]
    assert mismatches == []
