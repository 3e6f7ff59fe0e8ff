"""Every adapter sizes tool text the one way AXIS does: ``JSON.stringify``'s compact text.

Upstream ``test/unit/scoring/sparse-index.test.ts``, "contextBytes uses full toolInput when
available": a ``Write`` of ``{file_path: "/tmp/file.md", content: "A".repeat(2000)}``
answered ``File created successfully`` weighs 2,041 + 25 = 2,066 bytes. The transcript
builder, the ACP transcript and the native and declarative readers all measure with
``axis_eval._util.json_text``; before, they measured Python's spaced ``json.dumps`` (2,044
bytes of input), so the same call weighed 2,069 here.
"""

from __future__ import annotations

from typing import Any

from axis_eval.adapters import claude_code, codex, declarative, gemini
from axis_eval.adapters._acp_transcript import AcpTranscript
from axis_eval.adapters.base import StreamContext
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.transcript.models import ToolCall

WRITE_INPUT = {"file_path": "/tmp/file.md", "content": "A" * 2000}
WRITE_TEXT = '{"file_path":"/tmp/file.md","content":"' + "A" * 2000 + '"}'
RESULT = "File created successfully"


def _only_call(builder: TranscriptBuilder) -> ToolCall:
    [call] = builder.finish().tool_calls
    return call


def test_the_builder_measures_the_upstream_write_call_as_axis_does() -> None:
    builder = TranscriptBuilder("claude-code")
    call_id = builder.tool_call("Write", WRITE_INPUT)
    builder.tool_result(call_id, RESULT)
    call = _only_call(builder)
    assert (call.input_bytes, call.output_bytes) == (2_041, 25)
    assert call.input_bytes + call.output_bytes == 2_066


def test_a_non_text_result_is_its_compact_json_text() -> None:
    """A result that is not text (an adapter passing a parsed value) is kept and measured as
    ``JSON.stringify`` writes it: no spaces, non-ASCII as it is, ``1.0`` as ``1``."""
    builder = TranscriptBuilder("x")
    call_id = builder.tool_call("mcp__db__query", {"q": "é"})
    builder.tool_result(call_id, {"ok": True, "rows": [1.0, "é"]})
    call = _only_call(builder)
    assert call.output == '{"ok":true,"rows":[1,"é"]}'
    assert call.output_bytes == len(call.output.encode())
    assert call.input_bytes == len('{"q":"é"}'.encode())


def test_an_input_past_the_text_cap_is_kept_as_the_same_text() -> None:
    """Past ``limits.output.transcript_bytes`` the input is kept as its JSON text, cut: the
    text kept is the one measured (compact), and the size is the whole input's."""
    builder = TranscriptBuilder("x", max_text_bytes=100)
    builder.tool_call("Write", WRITE_INPUT)
    call = _only_call(builder)
    assert isinstance(call.input, str) and call.input.startswith(WRITE_TEXT[:90])
    assert call.input_bytes == 2_041


def _acp_call(*updates: dict[str, Any]) -> ToolCall:
    builder = TranscriptBuilder("gemini-acp")
    acp = AcpTranscript(builder)
    for update in updates:
        acp.update(update)
    acp.finish()
    return _only_call(builder)


_DONE = {
    "sessionUpdate": "tool_call_update",
    "toolCallId": "t1",
    "status": "completed",
    "content": [{"type": "content", "content": {"type": "text", "text": RESULT}}],
}


def test_acp_measures_a_raw_input_at_start_and_on_update() -> None:
    start = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write", "kind": "edit"}
    at_start = _acp_call({**start, "rawInput": WRITE_INPUT}, _DONE)
    on_update = _acp_call(start, {**_DONE, "rawInput": WRITE_INPUT})
    for call in (at_start, on_update):
        assert (call.input_bytes, call.output_bytes) == (2_041, 25)


def test_acp_measures_what_a_call_without_raw_input_shows() -> None:
    """Gemini sends no ``rawInput``: the title and description stand for the input, measured
    the same way; a non-text ``rawOutput`` is its compact JSON text."""
    call = _acp_call(
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls é", "kind": "execute"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1",
            "status": "completed",
            "rawOutput": {"exit": 0, "took": 2.0},
        },
    )
    assert call.input == {"title": "ls é"}
    assert call.input_bytes == len('{"title":"ls é"}'.encode())
    assert call.output == '{"exit":0,"took":2}'


def test_the_live_estimate_counts_tool_input_as_the_same_text() -> None:
    """The live token estimate (characters / 5) counts a tool input as its compact JSON
    text in every native reader and in the declarative one."""
    claude = StreamContext(claude_code.ClaudeState(), TranscriptBuilder("claude-code"))
    block = {"type": "tool_use", "id": "t1", "name": "Write", "input": WRITE_INPUT}
    claude_code.on_line({"type": "assistant", "message": {"content": [block]}}, claude)
    assert claude.chars == len(WRITE_TEXT)

    item = {"id": "i1", "type": "command_execution", "command": "ls", "status": "in_progress"}
    codex_ctx = StreamContext(codex.CodexState(), TranscriptBuilder("codex"))
    codex.on_line({"type": "item.started", "item": item}, codex_ctx)
    assert codex_ctx.chars == len('{"command":"ls"}')

    gemini_ctx = StreamContext(gemini.GeminiState(), TranscriptBuilder("gemini"))
    event = {"type": "tool_use", "tool_name": "write_file", "parameters": WRITE_INPUT}
    gemini.on_line(event, gemini_ctx)
    assert gemini_ctx.chars == len(WRITE_TEXT)

    events = StreamContext(declarative._EventState(), TranscriptBuilder("mine"))
    declarative.on_event({"type": "tool_call", "name": "Write", "input": WRITE_INPUT}, events)
    assert events.chars == len(WRITE_TEXT)
