"""Categorization with the tool names real agents used (agentlab/samples)."""

from __future__ import annotations

from typing import Any

import pytest

from axis_eval.transcript.categories import (
    categorize,
    is_title,
    normalize_tool_name,
    reaches_network,
    touches_agent_path,
)

# (name as recorded, kind, input) → categories. Names come from agentlab/samples:
# claude_*.ndjson, codex_*.jsonl (item types → our adapter's names), gemini/qwen
# stream-json, opencode run --json, and ACP sessions (title as name, kind).
REAL: list[tuple[str, str | None, Any, list[str]]] = [
    ("Bash", None, {"command": "echo hello > out.txt && cat out.txt"}, ["environment"]),
    ("Read", None, {"file_path": "/w/out.txt"}, ["environment"]),
    ("Write", None, {"file_path": "/w/out.txt", "content": "hi"}, ["environment"]),
    ("mcp__fake__echo", None, {"text": "ping"}, ["service"]),
    ("shell", "command_execution", {"command": "bash -lc ls"}, ["environment"]),
    ("exec_command", None, {"cmd": ["bash", "-lc", "cat a.txt"]}, ["environment"]),
    ("apply_patch", None, {"input": "*** Begin Patch"}, ["environment"]),
    (
        "file_change",
        "file_change",
        {"changes": [{"path": "a.txt", "kind": "add"}]},
        ["environment"],
    ),
    ("run_shell_command", None, {"command": "echo hello > out.txt"}, ["environment"]),
    ("read_file", None, {"absolute_path": "/w/out.txt"}, ["environment"]),
    ("write_file", None, {"file_path": "/w/out.txt", "content": "x"}, ["environment"]),
    ("bash", None, {"command": "ls"}, ["environment"]),  # opencode
    ("echo hello > out.txt && cat out.txt", "execute", {"command": "echo"}, ["environment"]),
    ("`echo hello > out.txt && cat out.txt`", "execute", None, ["environment"]),
    ("Terminal", "execute", None, ["environment"]),
]


@pytest.mark.parametrize(("name", "kind", "tool_input", "expected"), REAL)
def test_real_sample_names(
    name: str, kind: str | None, tool_input: Any, expected: list[str]
) -> None:
    assert categorize(name, tool_input, kind) == expected


@pytest.mark.parametrize(
    ("name", "kind", "canonical"),
    [
        ("Bash", None, "bash"),
        ("BASH", None, "bash"),
        ("run_shell_command", None, "shell"),
        ("exec_command", None, "shell"),
        ("apply_patch", None, "edit"),
        ("read_file", None, "read"),
        ("write_file", None, "write"),
        ("list_directory", None, "ls"),
        ("search_file_content", None, "grep"),
        ("grep_search", None, "grep"),
        ("replace", None, "edit"),
        ("google_web_search", None, "websearch"),
        ("web_fetch", None, "webfetch"),
        ("mcp__Fake__Echo", None, "mcp__fake__echo"),
        ("echo hi > out.txt", "execute", "shell"),
        ("Write /tmp/x", "edit", "edit"),
        ("", "command_execution", "shell"),
        ("", None, ""),
        ("Some Title", "other", "some title"),
    ],
)
def test_normalize(name: str, kind: str | None, canonical: str) -> None:
    assert normalize_tool_name(name, kind) == canonical


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        # the seed's lists
        ("TodoWrite", {"todos": []}, ["agent"]),
        ("todo_write", {}, ["agent"]),
        ("write_todos", {}, ["agent"]),  # Gemini
        ("update_plan", {}, ["agent"]),  # Codex
        ("ToolSearch", {}, ["agent"]),
        ("ExitPlanMode", {}, ["agent"]),
        ("AskUserQuestion", {}, ["agent"]),
        ("Skill", {"skill": "pdf"}, ["agent"]),
        ("Task", {"prompt": "explore"}, ["agent"]),
        ("Glob", {"pattern": "**/*.py"}, ["environment"]),
        ("Grep", {"pattern": "x"}, ["environment"]),
        ("git", {}, ["environment"]),
        ("npm", {}, ["environment"]),
        ("kubectl", {}, ["environment"]),
        ("file_read", {}, ["environment"]),  # file_ prefix
        # services: everything else
        ("WebFetch", {"url": "https://example.com"}, ["service"]),
        ("WebSearch", {"query": "axis"}, ["service"]),
        ("mcp__github__create_issue", {"title": "x"}, ["service"]),
        ("create_invoice", {}, ["service"]),
        # MCP servers working on the machine are environment
        ("mcp__filesystem__read_file", {"path": "/w/a"}, ["environment"]),
        ("mcp__shell__run", {"command": "ls"}, ["environment"]),
        # network from a shell: environment and service
        ("Bash", {"command": "curl -s https://api.example.com/items"}, ["environment", "service"]),
        ("Bash", {"command": "wget example.com/x.tgz"}, ["environment", "service"]),
        (
            "run_shell_command",
            {"command": "git clone https://github.com/a/b"},
            ["environment", "service"],
        ),
        ("mcp__shell__run", {"command": "curl localhost:8080"}, ["environment", "service"]),
        # a URL in a file write is no network call
        ("Write", {"file_path": "README.md", "content": "see https://x.io"}, ["environment"]),
        ("Bash", {"command": "echo curling > notes.txt"}, ["environment"]),
        # agent-internal paths
        ("Read", {"file_path": "/home/u/.claude/settings.json"}, ["agent"]),
        ("Bash", {"command": "cat ~/.codex/config.toml"}, ["agent"]),
        ("read_file", {"absolute_path": "/w/.gemini/settings.json"}, ["agent"]),
        ("Write", {"file_path": ".agents/skills/x/SKILL.md"}, ["agent"]),
        ("Read", {"file_path": "C:\\w\\.claude\\CLAUDE.md"}, ["agent"]),
        ("Edit", {"file_path": "AGENTS.md"}, ["agent"]),
        # the agent path wins over the network
        ("Bash", {"command": "curl https://x.io -o .claude/x"}, ["agent"]),
    ],
)
def test_categories(name: str, tool_input: Any, expected: list[str]) -> None:
    assert categorize(name, tool_input) == expected


@pytest.mark.parametrize(
    ("title", "kind", "expected"),
    [
        ("Read file.txt", "read", ["environment"]),
        ("Edit a.py", "edit", ["environment"]),
        ("Delete a.py", "delete", ["environment"]),
        ("Move a → b", "move", ["environment"]),
        ("Find *.py", "search", ["environment"]),
        ("curl https://api.example.com", "execute", ["environment", "service"]),
        ("Thinking about it", "think", ["agent"]),
        ("Switch to plan mode", "switch_mode", ["agent"]),
        ("Fetch https://example.com", "fetch", ["service"]),
        ("Something custom", "other", ["service"]),
        ("Something custom", None, ["service"]),
        ("git status", None, ["environment"]),  # a title without kind: its first word
        ("`ls -la`", None, ["environment"]),
        ("Read .claude/settings.json", "read", ["agent"]),
    ],
)
def test_acp_titles_and_kinds(title: str, kind: str | None, expected: list[str]) -> None:
    assert categorize(title, None, kind) == expected


def test_kind_applies_when_the_name_is_unknown() -> None:
    assert categorize("custom_tool", {}, "read") == ["environment"]
    assert categorize("custom_tool", {}, "fetch") == ["service"]
    # a known name wins over the kind
    assert categorize("TodoWrite", {}, "edit") == ["agent"]


def test_helpers() -> None:
    assert is_title("echo hi") and is_title("`ls`") and not is_title("mcp__a__b")
    assert reaches_network("curl localhost") and reaches_network("x https://a.b")
    assert reaches_network("cd x && wget y") and not reaches_network("echo curly")
    assert touches_agent_path("/x/.Claude/y") and not touches_agent_path("/x/claude/y")
