"""The step alignment of two transcripts (axis_eval.view.align): known edits, properties."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.view import align
from axis_eval.view.align import Alignment, align_steps, align_transcripts, transcript_steps

T0 = "2026-01-01T00:00:00Z"


def tool(name: str, tool_input: Any, n: int = 0) -> Entry:
    return Entry(type="tool", timestamp=T0, tool=ToolCall(id=f"c{n}", name=name, input=tool_input))


def say(text: str) -> Entry:
    return Entry(type="assistant", timestamp=T0, text=text)


def transcript(*entries: Entry) -> Transcript:
    return Transcript(agent="scripted", entries=list(entries))


BASE = [
    say("I will look first."),
    tool("Bash", {"command": "ls -la"}),
    tool("Read", {"file_path": "a.txt"}),
    tool("Write", {"file_path": "out.txt", "content": "alpha"}),
    say("Done."),
]


def relations(result: Alignment) -> list[str]:
    return [row.relation for row in result.rows]


def test_identical_transcripts_are_all_same() -> None:
    result = align_transcripts(transcript(*BASE), transcript(*BASE))
    assert relations(result) == ["same"] * len(BASE)
    assert result.first_divergence is None and result.method == "exact" and result.note is None


def test_an_inserted_step_is_only_right_at_its_place() -> None:
    right = [*BASE[:2], tool("Bash", {"command": "cat a.txt"}), *BASE[2:]]
    result = align_transcripts(transcript(*BASE), transcript(*right))
    assert relations(result) == ["same", "same", "only-right", "same", "same", "same"]
    assert result.first_divergence == 2
    inserted = result.rows[2]
    assert inserted.left is None and inserted.right is not None
    assert inserted.right.entry_index == 2


def test_a_removed_step_is_only_left() -> None:
    right = [BASE[0], *BASE[2:]]
    result = align_transcripts(transcript(*BASE), transcript(*right))
    assert relations(result) == ["same", "only-left", "same", "same", "same"]
    assert result.first_divergence == 1


def test_same_tool_other_input_is_changed_not_two_gaps() -> None:
    right = [*BASE[:3], tool("Write", {"file_path": "out.txt", "content": "beta"}), BASE[4]]
    result = align_transcripts(transcript(*BASE), transcript(*right))
    assert relations(result) == ["same", "same", "same", "changed", "same"]
    assert result.first_divergence == 3


def test_another_tool_is_not_changed() -> None:
    right = [*BASE[:1], tool("Grep", {"pattern": "x"}), *BASE[2:]]
    result = align_transcripts(transcript(*BASE), transcript(*right))
    assert relations(result) == ["same", "only-left", "only-right", "same", "same", "same"]
    assert result.first_divergence == 1


def test_key_ignores_key_order_and_command_whitespace() -> None:
    left = transcript(tool("Bash", {"command": "ls   -la\n", "timeout": 5}))
    right = transcript(tool("Bash", {"timeout": 5, "command": " ls -la"}))
    assert relations(align_transcripts(left, right)) == ["same"]
    # whitespace outside commands (file content) still counts
    left = transcript(tool("Write", {"content": "a  b"}))
    right = transcript(tool("Write", {"content": "a b"}))
    assert relations(align_transcripts(left, right)) == ["changed"]


def test_exact_match_is_preferred_over_a_partial_one() -> None:
    # B runs the left's second command only: it pairs with it, not with the first Bash
    left = transcript(tool("Bash", {"command": "make"}), tool("Bash", {"command": "make test"}))
    right = transcript(tool("Bash", {"command": "make test"}))
    result = align_transcripts(left, right)
    assert relations(result) == ["only-left", "same"]


def test_long_transcripts_fall_back_to_greedy_and_say_so(monkeypatch: Any) -> None:
    monkeypatch.setattr(align, "MAX_CELLS", 4)
    left = [tool("Bash", {"command": f"step {i}"}) for i in range(6)]
    right = [*left[:2], tool("Bash", {"command": "extra"}), *left[2:4], say("x"), *left[4:]]
    # make the middle big enough: a different first and last step
    left_t = transcript(say("a"), *left, say("end a"))
    right_t = transcript(say("b"), *right, say("end b"))
    result = align_transcripts(left_t, right_t)
    assert result.method == "greedy" and result.note and "greedily" in result.note
    assert relations(result).count("same") == 6
    _check_cover(result, len(left_t.entries), len(right_t.entries))


def _check_cover(result: Alignment, n_left: int, n_right: int) -> None:
    lefts = [r.left.index for r in result.rows if r.left is not None]
    rights = [r.right.index for r in result.rows if r.right is not None]
    assert lefts == list(range(n_left)) and rights == list(range(n_right))
    for row in result.rows:
        if row.relation in ("same", "changed"):
            assert row.left is not None and row.right is not None
            assert (row.left.key == row.right.key) == (row.relation == "same")
            assert row.left.loose_key == row.right.loose_key
        else:
            assert (row.left is None) == (row.relation == "only-right")
            assert (row.right is None) == (row.relation == "only-left")
    first = next((i for i, r in enumerate(result.rows) if r.relation != "same"), None)
    assert result.first_divergence == first


_entries = st.one_of(
    st.builds(
        tool,
        st.sampled_from(["Bash", "Read", "Write"]),
        st.one_of(
            st.fixed_dictionaries({"command": st.sampled_from(["ls", "ls  -la", "make", "pwd"])}),
            st.fixed_dictionaries({"file_path": st.sampled_from(["a", "b"])}),
            st.sampled_from(["raw input", None]),
        ),
    ),
    st.builds(say, st.sampled_from(["ok", "done", "<img src=x onerror=alert(1)>"])),
    st.builds(lambda t: Entry(type="thinking", timestamp=T0, text=t), st.sampled_from(["h", "m"])),
)


@given(st.lists(_entries, max_size=25))
def test_a_transcript_aligned_with_itself_is_all_same(entries: list[Entry]) -> None:
    result = align_transcripts(transcript(*entries), transcript(*entries))
    assert relations(result) == ["same"] * len(entries)
    assert result.first_divergence is None


@given(st.lists(_entries, max_size=20), st.lists(_entries, max_size=20))
def test_rows_keep_each_sides_order_and_cover_every_step_once(
    left: list[Entry], right: list[Entry]
) -> None:
    result = align_transcripts(transcript(*left), transcript(*right))
    _check_cover(result, len(left), len(right))


@given(st.lists(_entries, max_size=15), st.lists(_entries, max_size=15))
def test_greedy_fallback_also_covers_every_step_once(left: list[Entry], right: list[Entry]) -> None:
    steps_left = transcript_steps(transcript(*left))
    steps_right = transcript_steps(transcript(*right))
    saved = align.MAX_CELLS
    align.MAX_CELLS = 0
    try:
        result = align_steps(steps_left, steps_right)
    finally:
        align.MAX_CELLS = saved
    _check_cover(result, len(left), len(right))
