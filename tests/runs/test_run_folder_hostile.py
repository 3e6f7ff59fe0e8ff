"""A run's folder is written whatever the agent printed: deep JSON, odd tool inputs, size.

``save_run`` reads the agent's raw output (to name the file) and serializes its transcript;
neither may raise for anything an agent can produce, or the whole run would be lost.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from axis_eval.adapters.transcript_builder import MAX_INPUT_DEPTH, TranscriptBuilder
from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import plan
from axis_eval.planning.models import JobSpec
from axis_eval.redact import MASK, Redactor
from axis_eval.runs.run_folder import _is_ndjson, save_run
from axis_eval.runs.store import ReportStore
from axis_eval.transcript.models import Entry, ToolCall, Transcript

DEEP = "[" * 1100 + "]" * 1100
"""One line of JSON nested past Python's recursion limit."""


def job(tmp_path: Path, make_project: Callable[..., Path]) -> JobSpec:
    root = make_project(
        tmp_path / "p",
        {"agents": ["a"], "adapters": {"a": {"command": "true"}}},
        {"s": {"name": "S", "prompt": "p", "judge": "j"}},
    )
    return plan(load_config(str(root))).jobs[0]


def outcome(spec: JobSpec, **fields: Any) -> JobOutcome:
    return JobOutcome(spec=spec, status="completed", failed=False, **fields)


def run_folder(store: ReportStore) -> Path:
    return store.folder / "scenarios" / "s" / "a"


def test_a_deep_line_of_raw_output_is_saved(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    store = ReportStore(tmp_path / "r")
    raw = ['{"type": "assistant", "text": "hi"}', DEEP]
    save_run(store, outcome(job(tmp_path, make_project), raw_output=raw))
    # Not NDJSON (the line does not parse), so it is kept as text, whole.
    assert (run_folder(store) / "raw.txt").read_text() == "".join(raw)
    assert (run_folder(store) / "result.json").is_file()


def test_is_ndjson_never_raises() -> None:
    assert _is_ndjson(['{"a": 1}', "[1, [2]]"])
    assert not _is_ndjson(['{"a": 1}', DEEP])
    assert not _is_ndjson(["{" * 5000])


def _transcript(tool_input: Any) -> Transcript:
    call = ToolCall(id="t1", name="Bash", input=tool_input, output="ok")
    return Transcript(
        agent="a",
        entries=[
            Entry(type="user", timestamp="2026-01-01T00:00:00Z", text="go"),
            Entry(type="tool", timestamp="2026-01-01T00:00:01Z", tool=call),
            Entry(type="assistant", timestamp="2026-01-01T00:00:02Z", text="done"),
        ],
        result="done",
    )


def test_a_tool_input_too_deep_to_serialize_is_written_as_text(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    # A reader that sets a call's input itself (not through the builder) can leave a
    # value nested past the serializer's depth: the entry is written with its JSON text.
    deep = json.loads("[" * 900 + "]" * 900)
    store = ReportStore(tmp_path / "r")
    save_run(store, outcome(job(tmp_path, make_project), transcript=_transcript(deep)))
    saved = Transcript.model_validate_json((run_folder(store) / "transcript.json").read_bytes())
    assert [e.type for e in saved.entries] == ["user", "tool", "assistant"]
    tool = saved.entries[1].tool
    assert tool is not None and isinstance(tool.input, str) and tool.input.startswith("[[[[")
    assert tool.output == "ok" and saved.result == "done"


def test_a_tool_input_that_is_no_json_is_written_as_a_note(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    store = ReportStore(tmp_path / "r")
    odd = _transcript({"handle": object()})  # what a Python adapter might hand over
    save_run(store, outcome(job(tmp_path, make_project), transcript=odd))
    saved = Transcript.model_validate_json((run_folder(store) / "transcript.json").read_bytes())
    assert saved.entries[1].tool is not None
    assert saved.entries[1].tool.input == "(a value that cannot be written as JSON)"


def test_the_builder_keeps_a_deep_input_readable() -> None:
    builder = TranscriptBuilder("a")
    deep = json.loads("[" * (MAX_INPUT_DEPTH + 1) + "]" * (MAX_INPUT_DEPTH + 1))
    shallow = json.loads("[" * MAX_INPUT_DEPTH + "]" * MAX_INPUT_DEPTH)
    builder.tool_call("x", deep, id="1")
    builder.tool_call("y", shallow, id="2")
    entries = builder.finish().entries
    assert entries[0].tool is not None and isinstance(entries[0].tool.input, str)
    assert entries[1].tool is not None and entries[1].tool.input == shallow
    # and what was written reads back (pydantic's parser stops near 200 levels)
    Transcript.model_validate_json(builder.transcript.model_dump_json())


def test_transcript_is_streamed_with_the_same_bytes_and_redacted(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    secret = "hunter2-very-secret"
    transcript = _transcript({"command": f"echo {secret}\nand more"})
    transcript.entries[0].text = f"the key is {secret}"
    transcript.entries[2].text = "long " * 300_000  # 1.5 MB: written entry by entry
    spec = job(tmp_path, make_project)
    store = ReportStore(tmp_path / "r", Redactor([secret]))
    save_run(store, outcome(spec, transcript=transcript))
    streamed = (run_folder(store) / "transcript.json").read_bytes()
    store.write_json("whole.json", transcript)  # the way it was written before
    assert streamed == (store.folder / "whole.json").read_bytes()
    assert secret.encode() not in streamed and MASK.encode() in streamed
    empty = Transcript(agent="a")
    save_run(store, outcome(spec, transcript=empty))
    assert (
        Transcript.model_validate_json((run_folder(store) / "transcript.json").read_bytes())
        == empty
    )


def test_a_large_transcript_is_written_without_holding_it_twice(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    text = "t" * (512 * 1024)
    big = Transcript(
        agent="a",
        entries=[Entry(type="assistant", timestamp="2026-01-01T00:00:00Z", text=text)] * 40,
    )  # 20 MiB of text
    store = ReportStore(tmp_path / "r", Redactor(["some-secret-value"]))
    spec = job(tmp_path, make_project)
    tracemalloc.start()
    try:
        save_run(store, outcome(spec, transcript=big))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (run_folder(store) / "transcript.json").stat().st_size > 20 * 1024 * 1024
    assert peak < 8 * 1024 * 1024, peak  # one entry at a time (in one piece: ~60 MiB)
