"""Where the transcript stage must agree with AXIS's own unit tests (issue 21).

Each test names the upstream test it restates (netlify/axis, ``test/unit/...``).
"""

from __future__ import annotations

from typing import Any

import pytest

from axis_eval.transcript.categories import categorize
from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.transcript.sparse_index import build_sparse_index


@pytest.mark.parametrize("kind", ["modify", "add", "delete", "move", "MODIFY", "Add"])
def test_acp_kinds_modify_add_delete_move_are_environment(kind: str) -> None:
    """Upstream ``test/unit/transcript/categorize.test.ts``: "classifies ACP
    kind=modify/add/delete/move as environment" (``categorizeInteraction("tool_use", "x",
    {kind})`` is ``["environment"]`` for each; kinds are case-insensitive, "is
    case-insensitive for ACP kind"). ``modify`` and ``add`` were services here."""
    assert categorize("x", None, kind) == ["environment"]
    assert categorize("Updating src/app.ts", {"path": "src/app.ts"}, kind) == ["environment"]


@pytest.mark.parametrize("kind", ["modify", "add"])
def test_modify_and_add_get_the_environment_refinements(kind: str) -> None:
    """Upstream ``categorize.test.ts``, "classifies ACP kind=edit on agent-internal path as
    agent": an environment kind on ``.gemini/`` & co. is the agent organising itself; a
    name in the lists still wins over the kind ("ignores ACP kind when toolName already
    matches an agent tool")."""
    title = "Writing to .gemini/settings.json"
    assert categorize(title, {"path": ".gemini/settings.json"}, kind) == ["agent"]
    assert categorize("TaskCreate", None, kind) == ["agent"]


def _write_call(**measured: int) -> Transcript:
    call = ToolCall(
        id="w1",
        name="Write",
        input={"file_path": "/tmp/file.md", "content": "A" * 2000},
        output="File created successfully",
        **measured,
    )
    entry = Entry(type="tool", timestamp="2026-05-01T10:00:00.000Z", tool=call)
    return Transcript(agent="claude-code", entries=[entry])


def test_context_bytes_measure_the_input_as_json_stringify_writes_it() -> None:
    """Upstream ``test/unit/scoring/sparse-index.test.ts``, "contextBytes uses full
    toolInput when available": ``{file_path: "/tmp/file.md", content: "A".repeat(2000)}``
    with the result ``File created successfully`` weighs
    ``TextEncoder(JSON.stringify(toolInput)) + TextEncoder(resultText)`` = 2,041 + 25 =
    2,066 bytes (Python's spaced ``json.dumps`` made it 2,069)."""
    [interaction] = build_sparse_index(_write_call()).interactions
    assert (interaction.input_bytes, interaction.output_bytes) == (2_041, 25)
    assert interaction.context_bytes == 2_066
    assert interaction.context_bytes > 2_000  # "much larger than just summary + result"


def test_sizes_the_adapter_recorded_are_kept() -> None:
    """A transcript written with sizes (every adapter records them) keeps them: the sparse
    index measures only what was not measured."""
    [interaction] = build_sparse_index(_write_call(input_bytes=7, output_bytes=3)).interactions
    assert interaction.context_bytes == 10


@pytest.mark.parametrize(
    ("tool_input", "size"),
    [
        ({"path": "é", "n": 1.0}, len('{"path":"é","n":1}'.encode())),
        ({"2": "b", "1": "a"}, len('{"1":"a","2":"b"}')),
        ("echo hi", 7),  # a string input is its own text
        ([1, 2.5, None], len("[1,2.5,null]")),
    ],
)
def test_an_unmeasured_input_is_measured_the_one_way(tool_input: Any, size: int) -> None:
    """The same measure as the adapters' (``axis_eval._util.json_text.context_bytes``):
    numbers as JavaScript prints them, no spaces, UTF-8 bytes."""
    call = ToolCall(id="t", name="mcp__x__y", input=tool_input)
    transcript = Transcript(
        agent="x", entries=[Entry(type="tool", timestamp="2026-05-01T10:00:00Z", tool=call)]
    )
    [interaction] = build_sparse_index(transcript).interactions
    assert interaction.input_bytes == size
