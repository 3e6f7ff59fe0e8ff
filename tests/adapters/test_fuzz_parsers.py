"""Fuzz the declarative adapter's NDJSON event parser (``output: ndjson``, docs/events.md).

As for the native built-ins (``native/test_fuzz_native.py``): the per-event callback, the
stream reader fed raw bytes, and one whole run through the supervisor with a fake process.
A malformed event is the documented case: a warning and a ``system`` entry, never a raise.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from adapters.fuzzing import (
    GARBAGE_LINES,
    HUGE_INT,
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
    run_async,
    streams,
    time_limit,
)
from axis_eval.adapters.base import AgentAdapter, ResultContext, StreamContext
from axis_eval.adapters.declarative import declarative_adapter
from axis_eval.adapters.streams import StreamReader
from axis_eval.config.models import DeclarativeAdapter
from axis_eval.execute.process import new_run_token
from axis_eval.execute.supervise import RunControl, run_agent

SEEDS: list[dict[str, Any]] = [  # docs/events.md's example, and every other event type
    {"type": "session", "id": "4f2c"},
    {"type": "thinking", "text": "I should look at the files first."},
    {"type": "assistant_delta", "text": "Let me "},
    {"type": "assistant_delta", "text": "look."},
    {"type": "tool_call", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
    {"type": "tool_result", "id": "t1", "output": "README.md\n", "is_error": False},
    {
        "type": "usage",
        "input_tokens": 1200,
        "output_tokens": 85,
        "cache_read_input_tokens": 900,
        "cost_usd": 0.004,
    },
    {"type": "assistant", "text": "The folder holds README.md."},
    {"type": "result", "text": "README.md", "session_id": "4f2c"},
    {"type": "error", "message": "API key invalid"},
    {"type": "system", "text": "retrying"},
    {"type": "tool_call", "id": 7, "name": "Read", "kind": "read", "input": None},
    {"type": "tool_result", "name": "Read", "output": {"lines": [1, 2]}, "is_error": True},
]


def ndjson_adapter() -> AgentAdapter[Any]:
    spec = DeclarativeAdapter.model_validate({"command": "my-cli", "output": "ndjson"})
    return declarative_adapter("my-cli", spec)


def feed(values: list[Any], exit_code: int = 0) -> tuple[StreamContext[Any], Any]:
    adapter = ndjson_adapter()
    ctx: StreamContext[Any] = StreamContext(adapter.initial_state(), builder())
    stream = adapter.stream
    with time_limit(5):
        for value in values:
            stream.on_line(value, ctx)  # type: ignore[call-arg]
        if stream.on_end is not None:
            stream.on_end(ctx)
        res = adapter.get_result(ResultContext(ctx.state, ctx.transcript, exit_code, "", "", ""))
    transcript = ctx.transcript.finish()
    transcript.cost_usd = res.cost_usd
    assert_valid_transcript(transcript)
    return ctx, res


@pytest.mark.fuzz
@examples(30)
@given(values=st.lists(events(SEEDS), max_size=12), exit_code=st.sampled_from([0, 1]))
def test_no_event_makes_the_ndjson_parser_raise(values: list[Any], exit_code: int) -> None:
    _, res = feed(values, exit_code)
    for value in (res.result, res.error, res.session_id):
        assert value is None or isinstance(value, str)


def test_every_field_of_every_event_set_to_every_wrong_type() -> None:
    values = [m for seed in SEEDS for m in field_mutations(seed)]
    ctx, _ = feed(values)
    assert any("malformed" in w for w in ctx.warnings)


@pytest.mark.fuzz
@examples(20)
@given(raw=streams(SEEDS))
def test_no_stream_makes_the_ndjson_reader_fail(raw: bytes) -> None:
    async def read() -> tuple[StreamReader, Notes, Any]:
        notes = Notes()
        b = builder()
        reader = StreamReader(ndjson_adapter(), adapter_input("/nonexistent"), b, notes)
        stdout = asyncio.StreamReader()
        stdout.feed_data(raw)
        stdout.feed_eof()
        await reader.read(stdout, None)
        await reader.finish(0, "", False)
        return reader, notes, b.transcript

    reader, notes, transcript = run_async(read())
    assert_no_crash(notes)
    assert_valid_transcript(transcript)
    assert_writable(reader.raw_output)


# -- concrete cases (each failed before its fix) ----------------------------------------


@pytest.mark.parametrize("count", [float("inf"), float("nan"), HUGE_INT, 2**60])
def test_an_impossible_token_count_is_a_malformed_event(count: float) -> None:
    """``1e400`` (read as infinity), NaN or 10**4000 tokens: a warning, not an
    OverflowError from ``int()`` (or an absurd count kept)."""
    ctx, _ = feed([{"type": "usage", "input_tokens": count}])
    assert ctx.transcript.transcript.usage.input == 0
    assert any('"input_tokens" must be a non-negative number' in w for w in ctx.warnings)


@pytest.mark.parametrize("cost", [float("inf"), float("nan"), HUGE_INT, -1])
def test_an_impossible_cost_is_a_malformed_event(cost: float) -> None:
    ctx, res = feed([{"type": "usage", "input_tokens": 5, "cost_usd": cost}])
    assert res.cost_usd is None
    assert any('"cost_usd" must be a finite' in w for w in ctx.warnings)


def test_lone_surrogates_and_deep_nesting_still_make_a_writable_transcript() -> None:
    """Both parse as JSON, yet neither could be written to transcript.json (UTF-8 refuses
    lone surrogates; pydantic gives up on nesting past ~250 levels)."""
    ctx, res = feed(
        [
            {"type": "assistant", "text": "bad \ud800 text"},
            {"type": "tool_call", "id": "t", "name": "Deep", "input": nested(300)},
            {"type": "result", "text": "ok \udfff"},
        ]
    )
    entries = ctx.transcript.transcript.entries
    assert entries[1].text == "bad \ufffd text"
    assert res.result == "ok \ufffd"
    assert any("lone surrogates" in w for w in ctx.warnings)
    assert any("nested deeper than 64 levels" in w for w in ctx.warnings)


async def test_a_whole_garbage_run_ends_with_a_valid_transcript(tmp_path: Path) -> None:
    out_lines = list(GARBAGE_LINES)
    for seed in reversed(SEEDS):
        line = dumps(seed)
        out_lines += [line[: len(line) // 2], line]
        for key in seed:
            for wrong in ("x", None, [1], HUGE_INT, float("inf"), "\ud800", nested(300)):
                out_lines.append(dumps({**seed, key: wrong}))
    control = RunControl(
        marker=f"{new_run_token()}/1",
        grace_s=0.1,
        spawner=fake_spawner(b"\n".join(out_lines)),
    )
    inp = adapter_input(str(tmp_path), adapter="my-cli")
    out = await asyncio.wait_for(run_agent(ndjson_adapter(), inp, control), 30)
    assert out.transcript is not None
    assert_valid_transcript(out.transcript)
    assert_writable(out.raw_output)
    assert not [w for w in out.warnings if " raised " in w], out.warnings
    assert out.result == "README.md"
