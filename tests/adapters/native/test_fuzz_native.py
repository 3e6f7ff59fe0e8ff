"""Fuzz the stdout parsers of the native built-ins (claude-code, codex, gemini).

Three levels, each the one a real run goes through: the per-event callback the stream
reader calls (``adapter.stream.on_line``), the stream reader itself fed raw bytes
(:class:`~axis_eval.adapters.streams.StreamReader`), and one whole run per agent through
the supervisor with a fake process in place of the CLI. Properties: nothing raises (an
adapter callback that raises shows up as an ``on_line errors`` warning), nothing hangs,
what could not be read is warned about, and the transcript serializes and reads back.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from adapters.fuzzing import (
    GARBAGE_LINES,
    Notes,
    adapter_input,
    assert_no_crash,
    assert_valid_transcript,
    assert_writable,
    builder,
    dumps,
    events,
    examples,
    fake_spawner,
    field_mutations,
    nested,
    recorded,
    run_async,
    streams,
    time_limit,
)
from axis_eval.adapters import claude_code, codex, gemini
from axis_eval.adapters.base import AdapterResult, AgentAdapter, ResultContext, StreamContext
from axis_eval.adapters.builtins import BUILTINS
from axis_eval.adapters.streams import StreamReader
from axis_eval.adapters.supervision import NOT_JSON
from axis_eval.execute.process import new_run_token
from axis_eval.execute.supervise import RunControl, run_agent

MODULES: dict[str, Any] = {"claude-code": claude_code, "codex": codex, "gemini": gemini}

_TOOL_RESULT = {
    "type": "tool_result",
    "tool_use_id": "t1",
    "is_error": True,
    "content": [{"type": "text", "text": "no such file"}, {"type": "image"}],
}
EXTRA_SEEDS: dict[str, list[dict[str, Any]]] = {
    "claude-code": [
        {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1, "error": "x"},
        {"type": "system", "subtype": "hook", "x": 1},
        {
            "type": "system",
            "subtype": "init",
            "model": "m",
            "mcp_servers": [{"name": "a", "status": "failed"}],
            "tools": ["Bash"],
        },
        {
            "type": "assistant",
            "error": "server_error",
            "message": {
                "id": "1",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error"}],
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        },
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "thinking", "thinking": "hmm"},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}},
                ],
            },
        },
        {"type": "user", "message": {"content": [_TOOL_RESULT, {"type": "text", "text": "u"}]}},
        {"type": "user", "message": {"content": "a replayed prompt"}},
        {
            "type": "result",
            "subtype": "error_during_execution",
            "is_error": True,
            "errors": ["boom"],
            "total_cost_usd": 0.5,
            "permission_denials": [{"tool_name": "Bash"}],
            "usage": {"input_tokens": 1, "output_tokens": 2},
        },
        {"type": "stream_event", "event": {}},
    ],
    "codex": [
        {"type": "item.started", "item": {"id": "i0", "type": "file_change", "changes": []}},
        {
            "type": "item.completed",
            "item": {
                "id": "i0",
                "type": "file_change",
                "status": "completed",
                "changes": [{"path": "/w/a.txt", "kind": "add"}],
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "i1",
                "type": "mcp_tool_call",
                "server": "echo",
                "tool": "echo",
                "arguments": {"text": "hi"},
                "result": {"content": [{"type": "text", "text": "MCP-ECHO:hi"}]},
                "error": None,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {"id": "i4", "type": "todo_list", "items": [{"text": "a", "completed": True}]},
        },
        {"type": "item.completed", "item": {"id": "i5", "type": "web_search", "query": "q"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "reasoning", "text": "think"}},
        {"type": "item.updated", "item": {"id": "i6", "type": "command_execution"}},
        {"type": "error", "message": "Reconnecting... 1/1 (x)"},
        {"type": "error", "message": "Connection failed"},
        {"type": "turn.failed", "error": {"message": "Connection failed"}},
    ],
    "gemini": [
        {"type": "init", "session_id": "s", "model": "gemini-2.5-pro"},
        {
            "type": "tool_result",
            "tool_id": "t",
            "status": "error",
            "error": {"type": "x", "message": "denied"},
        },
        {"type": "error", "severity": "warning", "message": "loop?"},
        {"type": "error", "severity": "error", "message": "[API Error: fetch failed]"},
        {"type": "result", "status": "error", "error": {"type": "E", "message": "boom"}},
        {"type": "message", "role": "assistant", "content": "whole", "delta": False},
    ],
}
SEEDS = {name: recorded(name) + EXTRA_SEEDS[name] for name in MODULES}


@cache
def adapter(name: str) -> AgentAdapter[Any]:
    built: AgentAdapter[Any] = MODULES[name].NATIVE.adapter(BUILTINS[name], require_binary=False)
    return built


def check_result(res: AdapterResult) -> None:
    for value in (res.result, res.error, res.session_id):
        assert value is None or isinstance(value, str)
        if value is not None:
            value.encode("utf-8")


def feed(name: str, values: list[Any], exit_code: int = 0) -> StreamContext[Any]:
    """Each value to the adapter's per-line callback, then on_end and get_result."""
    built = adapter(name)
    ctx: StreamContext[Any] = StreamContext(built.initial_state(), builder())
    stream = built.stream
    with time_limit(5):
        for value in values:
            stream.on_line(value, ctx)  # type: ignore[call-arg]
        if stream.on_end is not None:
            stream.on_end(ctx)
        res = built.get_result(ResultContext(ctx.state, ctx.transcript, exit_code, "", "", ""))
    check_result(res)
    transcript = ctx.transcript.finish()
    if res.cost_usd is not None:
        transcript.cost_usd = res.cost_usd
    assert_valid_transcript(transcript)
    return ctx


async def read_stream(
    name: str, data: bytes, exit_code: int = 0
) -> tuple[StreamReader, Notes, list[str], Any]:
    notes = Notes()
    b = builder()
    reader = StreamReader(adapter(name), adapter_input("/nonexistent"), b, notes)
    stdout = asyncio.StreamReader()
    stdout.feed_data(data)
    stdout.feed_eof()
    await reader.read(stdout, None)
    reading = await reader.finish(exit_code, "", False)
    return reader, notes, reading.warnings, b.transcript


def not_json_count(data: bytes) -> int:
    """How many lines the reader cannot parse (what it must warn about)."""
    count = 0
    for raw in data.split(b"\n"):
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            continue
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            count += 1
    return count


# -- per event -------------------------------------------------------------------------


@pytest.mark.fuzz
@pytest.mark.parametrize("name", list(MODULES))
@examples(25)
@given(data=st.data())
def test_no_event_makes_the_callback_raise(name: str, data: st.DataObject) -> None:
    values = data.draw(st.lists(events(SEEDS[name]), max_size=12), label="events")
    exit_code = data.draw(st.sampled_from([0, 1, -9]), label="exit code")
    ctx = feed(name, values, exit_code)
    for message in ctx.warnings:
        message.encode("utf-8")


@pytest.mark.parametrize("name", list(MODULES))
def test_every_field_of_every_seed_set_to_every_wrong_type(name: str) -> None:
    """Deterministic, exhaustive: each field of each seed event deleted or replaced by a
    string, null, a list, an object, a huge number, NaN, a lone surrogate, deep nesting."""
    values = [m for seed in SEEDS[name] for m in field_mutations(seed)]
    assert len(values) > 500
    feed(name, values)


# -- per line, through the stream reader -------------------------------------------------


@pytest.mark.fuzz
@pytest.mark.parametrize("name", list(MODULES))
@examples(20)
@given(data=st.data())
def test_no_stream_makes_the_reader_fail(name: str, data: st.DataObject) -> None:
    raw = data.draw(streams(SEEDS[name]), label="stdout")
    reader, notes, warnings, transcript = run_async(read_stream(name, raw))
    assert_no_crash(notes)
    assert_valid_transcript(transcript)
    assert_writable(reader.raw_output)
    # every line json.loads refuses is warned about (the reader may refuse more: NaN …)
    warned = sum(1 for key, _ in notes.items if key == NOT_JSON)
    assert not_json_count(raw) <= warned <= len([x for x in raw.split(b"\n") if x.strip()])
    for message in warnings:
        message.encode("utf-8")


# -- a whole run, through the supervisor -------------------------------------------------


def hostile_stream(name: str) -> bytes:
    """Every garbage line, the recorded stream reversed with its lines cut in half,
    whole, and with each field of each event set to a string, null, a list, a huge number
    and deep nesting in turn."""
    seeds = SEEDS[name]
    out: list[bytes] = list(GARBAGE_LINES)
    for seed in reversed(recorded(name)):
        line = dumps(seed)
        out += [line[: len(line) // 2], line]
    for seed in seeds:
        for key in seed:
            for wrong in ("x", None, [1], 10**4000, float("inf"), "\ud800", nested(300)):
                out.append(dumps({**seed, key: wrong}))
    return b"\n".join(out)


@pytest.mark.parametrize("name", list(MODULES))
async def test_a_whole_garbage_run_ends_with_a_valid_transcript(name: str, tmp_path: Path) -> None:
    inp = adapter_input(str(tmp_path), adapter=name, command=["fake-cli"])
    control = RunControl(
        marker=f"{new_run_token()}/1", grace_s=0.1, spawner=fake_spawner(hostile_stream(name))
    )
    out = await asyncio.wait_for(run_agent(adapter(name), inp, control), 30)
    assert out.transcript is not None
    assert_valid_transcript(out.transcript)
    assert_writable(out.raw_output)
    assert not [w for w in out.warnings if " raised " in w], out.warnings
    assert any("not JSON" in w for w in out.warnings)
    assert any("lone surrogates" in w for w in out.warnings), out.warnings
    assert any("nested deeper" in w for w in out.warnings), out.warnings


# -- concrete cases (each failed before its fix) ----------------------------------------


def warnings_of(name: str, events: list[dict[str, Any]]) -> tuple[list[str], Any]:
    """Feed ``events`` through the stream reader; return its notes and the transcript."""
    data = b"\n".join(dumps(e) for e in events)
    _, notes, warnings, transcript = run_async(read_stream(name, data))
    return [m for _, m in notes.items] + warnings, transcript


@pytest.mark.parametrize(
    "event",
    [
        {"type": "system", "subtype": "init", "tools": 5},
        {"type": "system", "subtype": "init", "mcp_servers": 5},
        {"type": "system", "subtype": "init", "tools": True, "mcp_servers": 1.5},
    ],
    ids=["tools", "mcp_servers", "both"],
)
def test_claude_init_with_a_number_for_a_list(event: dict[str, Any]) -> None:
    """``len(5)`` / ``for s in 5`` raised TypeError: the init event was lost."""
    notes, transcript = warnings_of("claude-code", [event])
    assert not [n for n in notes if " raised " in n], notes
    assert transcript.entries[-1].text.startswith("init: model None, 0 tools")


@pytest.mark.parametrize(
    ("cost", "expected"),
    [(10**4000, None), (float("inf"), None), (float("nan"), None), (-1, None), (0.25, 0.25)],
    ids=["10**4000", "1e400", "NaN", "negative", "real"],
)
def test_claude_result_cost_must_be_a_finite_number(cost: Any, expected: float | None) -> None:
    """10**4000 raised OverflowError in get_result (no answer recorded); infinity and NaN
    were kept as the run's cost."""
    ctx = feed(
        "claude-code",
        [{"type": "result", "subtype": "success", "result": "hi", "total_cost_usd": cost}],
    )
    res = adapter("claude-code").get_result(ResultContext(ctx.state, ctx.transcript, 0, "", "", ""))
    assert (res.result, res.cost_usd) == ("hi", expected)


@pytest.mark.parametrize(
    "item",
    [
        {"id": "i", "type": "file_change", "status": "completed", "changes": 5},
        {"id": "i", "type": "todo_list", "items": 2.5},
    ],
    ids=["changes", "items"],
)
def test_codex_items_with_a_number_for_a_list(item: dict[str, Any]) -> None:
    """``for c in 5`` raised TypeError: the tool call stayed open without its output."""
    notes, transcript = warnings_of("codex", [{"type": "item.completed", "item": item}])
    assert not [n for n in notes if " raised " in n], notes
    [call] = transcript.tool_calls
    assert call.output == ""


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("claude-code", {"type": "result", "usage": {"input_tokens": float("inf")}}),
        ("codex", {"type": "turn.completed", "usage": {"input_tokens": float("nan")}}),
        ("gemini", {"type": "result", "status": "success", "stats": {"input": 10**4000}}),
        ("gemini", {"type": "result", "stats": {"models": {"m": {"output_tokens": 1e400}}}}),
    ],
    ids=["claude-inf", "codex-nan", "gemini-huge", "gemini-model-inf"],
)
def test_impossible_token_counts_read_as_zero(name: str, event: dict[str, Any]) -> None:
    """``int(inf)`` raised OverflowError, ``int(nan)`` ValueError (the usage was lost);
    10**4000 tokens were kept, and overflowed the float cost estimate."""
    notes, transcript = warnings_of(name, [event])
    assert not [n for n in notes if " raised " in n], notes
    assert transcript.usage.total == 0


@pytest.mark.parametrize("name", list(MODULES))
def test_lone_surrogates_and_deep_nesting_keep_the_transcript_writable(name: str) -> None:
    """A ``"\\ud800"`` escape parses to a lone surrogate that UTF-8 refuses, and a tool input
    300 levels deep is past pydantic's serializer limit: transcript.json could not be
    written. Both are replaced (the raw output keeps the line) and warned about."""
    deep = nested(300)
    lines = {
        "claude-code": [
            {"type": "system", "subtype": "init", "model": "m\ud800"},
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "text", "text": "a \udfff b"},
                        {"type": "tool_use", "id": "t", "name": "Bash", "input": deep},
                    ]
                },
            },
        ],
        "codex": [
            {
                "type": "item.completed",
                "item": {"id": "1", "type": "agent_message", "text": "a \udfff b"},
            },
            {
                "type": "item.completed",
                "item": {"id": "t", "type": "mcp_tool_call", "arguments": deep},
            },
        ],
        "gemini": [
            {"type": "message", "role": "assistant", "content": "a \udfff b"},
            {"type": "tool_use", "tool_name": "Bash", "tool_id": "t", "parameters": deep},
        ],
    }[name]
    notes, transcript = warnings_of(name, lines)
    assert_valid_transcript(transcript)
    assert "a \ufffd b" in [e.text for e in transcript.entries]
    assert any("lone surrogates" in n for n in notes)
    assert any("nested deeper than 64 levels" in n for n in notes)
