"""The sparse index of a real-looking transcript: ids, categories, timing, bytes, text."""

from __future__ import annotations

from typing import Any

from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.transcript.sparse_index import (
    build_sparse_index,
    describe_input,
    format_bytes,
    format_ms,
)


def tool(
    offset_ms: int,
    name: str,
    tool_input: Any,
    output: str | None = "",
    *,
    duration_ms: int | None = None,
    is_error: bool = False,
    kind: str | None = None,
    input_bytes: int = 0,
    output_bytes: int = 0,
) -> Entry:
    return Entry(
        type="tool",
        timestamp="2026-05-01T10:00:00.000Z",
        offset_ms=offset_ms,
        tool=ToolCall(
            id=f"t{offset_ms}",
            name=name,
            input=tool_input,
            output=output,
            is_error=is_error,
            kind=kind,
            duration_ms=duration_ms,
            input_bytes=input_bytes,
            output_bytes=output_bytes,
        ),
    )


def text(kind: str, offset_ms: int, body: str) -> Entry:
    return Entry(type=kind, timestamp="2026-05-01T10:00:00.000Z", offset_ms=offset_ms, text=body)


def claude_like() -> Transcript:
    """A Claude run as our adapter records it: a message, four tools, an error, a result."""
    return Transcript(
        agent="claude-code",
        duration_ms=9_000,
        entries=[
            text("system", 800, "init"),
            text("assistant", 1_200, "I'll look around first."),
            tool(1_500, "Bash", {"command": "ls -la"}, "a.txt\nb.txt", duration_ms=40,
                 input_bytes=22, output_bytes=12),
            tool(2_000, "Bash", {"command": "curl -s https://api.example.com/items?page=1"},
                 '{"error": "timeout"}', duration_ms=6_000, is_error=True,
                 input_bytes=60, output_bytes=2_048),
            text("thinking", 8_100, "hmm"),
            tool(8_200, "TodoWrite", {"todos": [{"content": "x"}]}, "ok", duration_ms=3,
                 input_bytes=30, output_bytes=2),
            tool(8_300, "mcp__fake__echo", {"text": "ping"}, None),  # never answered
            text("error", 8_500, "API Error: 529\n  overloaded"),
            text("assistant", 8_600, "Done."),
        ],
    )  # fmt: skip


def test_interactions_of_a_claude_like_run() -> None:
    index = build_sparse_index(claude_like(), scenario_key="cms/list", agent_name="claude")
    got = [
        (i.id, i.categories, i.tool, i.start_ms, i.duration_ms, i.is_error)
        for i in index.interactions
    ]
    assert got == [
        (1, ["environment"], "Bash", 1_500, 40, False),
        (2, ["environment", "service"], "Bash", 2_000, 6_000, True),
        (3, ["agent"], "TodoWrite", 8_200, 3, False),
        (4, ["service"], "mcp__fake__echo", 8_300, None, False),
        (5, ["agent"], "error", 8_500, None, True),
    ]
    # context size: in + out, at least 1; the unanswered call measures its input itself,
    # as JSON.stringify writes it: {"text":"ping"} is 15 bytes
    assert [i.context_bytes for i in index.interactions] == [34, 2_108, 32, 15, 27]
    assert index.by_id(2) is index.interactions[1] and index.by_id(9) is None
    assert [i.id for i in index.in_category("service")] == [2, 4]


def test_stats_and_text() -> None:
    index = build_sparse_index(claude_like(), scenario_key="cms/list", agent_name="claude")
    s = index.stats
    assert (s.interactions, s.environment, s.service, s.agent, s.errors) == (5, 2, 2, 2, 2)
    assert s.tool_time_ms == 40 + 6_000 + 3
    assert s.wall_clock_ms == 8_500  # the error at 8.5 s ends last (the curl ended at 8.0 s)
    assert s.context_bytes == 34 + 2_108 + 32 + 15 + 27
    assert s.startup_ms == 800  # first event
    assert s.shutdown_ms == 9_000 - 8_600  # last event to the end
    assert index.render() == (
        "# Sparse Index: cms/list / claude\n"
        "# 5 interactions | env: 2 | svc: 2 | agent: 2 | errors: 2\n"
        "# wall clock 8.5s | tool time 6.0s | context 2.2KB | startup 800ms | shutdown 400ms\n"
        "\n"
        "#1   env       Bash            ls -la | @1.5s 40ms | in 22B out 12B | ok\n"
        "#2   env,svc   Bash            curl -s https://api.example.com/items?page=1"
        " | @2.0s 6.0s | in 60B out 2.0KB | error\n"
        "#3   agent     TodoWrite       todos: 1 item | @8.2s 3ms | in 30B out 2B | ok\n"
        "#4   svc       mcp__fake__echo text: ping | @8.3s ? | in 15B out 0B | ok\n"
        "#5   agent     error           API Error: 529 overloaded | @8.5s ? | in 0B out 27B"
        " | error\n"
    )


def test_codex_gemini_acp_calls() -> None:
    transcript = Transcript(
        agent="codex",
        entries=[
            tool(100, "shell", {"command": "bash -lc 'cat a.txt'"}, "hi", duration_ms=30,
                 kind="command_execution"),
            tool(200, "file_change", {"changes": [{"path": "a.txt", "kind": "add"},
                                                  {"path": "b.txt", "kind": "update"}]},
                 "", duration_ms=1, kind="file_change"),
            tool(300, "run_shell_command", {"command": "echo hello > out.txt"}, "", duration_ms=9),
            tool(400, "echo hello > out.txt && cat out.txt", None, "hello", duration_ms=12,
                 kind="execute"),
            tool(500, "exec_command", {"cmd": ["bash", "-lc", "wget https://x.io/a.tgz"]}, "",
                 duration_ms=2_500),
        ],
    )  # fmt: skip
    index = build_sparse_index(transcript)
    assert index.agent == "codex" and index.scenario_key is None
    rows = [(i.categories, i.canonical_tool, i.detail) for i in index.interactions]
    assert rows == [
        (["environment"], "shell", "bash -lc 'cat a.txt'"),
        (["environment"], "file_change", "add: a.txt; update: b.txt"),
        (["environment"], "shell", "echo hello > out.txt"),
        (["environment"], "shell", "echo hello > out.txt && cat out.txt"),
        (["environment", "service"], "shell", "bash -lc wget https://x.io/a.tgz"),
    ]
    # an ACP title is shown by its canonical name, the title becomes the detail
    assert index.interactions[3].line().startswith("#4   env       shell           echo hello")
    assert index.render().startswith("# Sparse Index: - / codex\n")


def test_empty_transcript() -> None:
    index = build_sparse_index(Transcript(agent="gemini", entries=[text("assistant", 5, "hi")]))
    assert index.interactions == []
    assert index.render() == (
        "# Sparse Index: - / gemini\n"
        "# 0 interactions | env: 0 | svc: 0 | agent: 0 | errors: 0\n"
        "# wall clock 0ms | tool time 0ms | context 0B | startup 5ms\n"
        "\n"
    )


def test_duration_from_timestamps_when_missing() -> None:
    entry = tool(0, "Read", {"file_path": "a"}, "x")
    assert entry.tool is not None
    entry.tool.started_at = "2026-05-01T10:00:00.000Z"
    entry.tool.ended_at = "2026-05-01T10:00:01.250Z"
    index = build_sparse_index(Transcript(agent="x", entries=[entry]))
    assert index.interactions[0].duration_ms == 1_250


def test_describe_input() -> None:
    assert describe_input(None) == ""
    assert describe_input("  a\n  b ") == "a b"
    assert describe_input({"file_path": "/w/a.py", "content": "x" * 500}) == "/w/a.py"
    assert describe_input({"pattern": "TODO", "path": "src"}) == "src"  # path before pattern
    assert describe_input({"limit": 3, "on": True, "x": None, "ids": [1, 2]}) == (
        "limit: 3, on: true, ids: 2 items"
    )
    long = describe_input({"command": "echo " + "a" * 300})
    assert len(long) == 100 and long.endswith("...")
    assert describe_input([1, 2]) == "[1,2]"  # its JSON text, as JSON.stringify writes it
    assert describe_input({"changes": {"a.txt": {"type": "add"}}}) == "add: a.txt"


def test_formats() -> None:
    assert [format_ms(v) for v in (0, 999, 1_000, 59_949, 125_000)] == [
        "0ms",
        "999ms",
        "1.0s",
        "59.9s",
        "2m05s",
    ]
    assert [format_bytes(v) for v in (0, 1_023, 1_024, 1_536, 3 * 1024 * 1024)] == [
        "0B",
        "1023B",
        "1.0KB",
        "1.5KB",
        "3.0MB",
    ]


def test_json_round_trip() -> None:
    index = build_sparse_index(claude_like(), scenario_key="k", agent_name="a")
    again = type(index).model_validate_json(index.model_dump_json())
    assert again == index
    assert '"startMs"' in index.model_dump_json()
