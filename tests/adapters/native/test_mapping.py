"""Event mapping, command lines, config files, skills and prices, without spawning a CLI."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from axis_eval._types import TokenUsage
from axis_eval.adapters import _native, claude_code, codex, gemini, mcp_files, prices, skills
from axis_eval.adapters.base import AdapterInput, AdapterResult, ResultContext, StreamContext
from axis_eval.adapters.builtins import BUILTINS
from axis_eval.adapters.loader import AdapterLoadError, load_builtin
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.config.actions import McpHttpServer, McpStdioServer
from axis_eval.planning.models import AgentSpec

pytestmark = pytest.mark.slow  # drives a real agent CLI against the scripted model server


def _feed(module: Any, state: Any, events: list[dict[str, Any]], exit_code: int = 0) -> Any:
    builder = TranscriptBuilder("test")
    ctx = StreamContext(state, builder)
    for event in events:
        module.on_line(event, ctx)
    res: AdapterResult = module.NATIVE.result(
        ResultContext(state, builder, exit_code, "", "2026-01-01T00:00:00Z", "")
    )
    return res, builder.finish(), ctx


def _input(tmp_path: Path, **agent: Any) -> AdapterInput:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return AdapterInput(
        prompt="do it",
        agent=AgentSpec(name="a", adapter=agent.pop("adapter", "x"), **agent),
        workspace=str(tmp_path / "work"),
        home=str(home),
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
    )


# -- claude-code ------------------------------------------------------------------------


def test_claude_server_down_is_an_error_not_an_answer() -> None:
    events = [
        {"type": "system", "subtype": "init", "claude_code_version": "2.1.197", "model": "m"},
        {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 1, "error": "x"},
        {
            "type": "assistant",
            "error": "server_error",
            "message": {
                "id": "1",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error: Unable to connect"}],
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        },
        {"type": "result", "subtype": "success", "is_error": True, "result": "API Error: Unable"},
    ]
    res, transcript, _ = _feed(claude_code, claude_code.ClaudeState(), events, exit_code=1)
    assert res.result is None and res.error == "API Error: Unable"
    assert transcript.agent_version == "2.1.197"
    assert [e.type for e in transcript.entries] == ["system", "system", "error"]


def test_claude_blocks_map_to_thinking_tools_and_errors() -> None:
    message = {
        "id": "m1",
        "model": "claude-x",
        "usage": {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 4},
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}},
        ],
    }
    result_block = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "is_error": True,
        "content": [{"type": "text", "text": "no such file"}],
    }
    events = [
        {"type": "assistant", "message": message},
        {"type": "user", "message": {"content": [result_block]}},
    ]
    res, transcript, _ = _feed(claude_code, claude_code.ClaudeState(), events, exit_code=0)
    call = transcript.tool_calls[0]
    assert (call.name, call.output, call.is_error) == ("Read", "no such file", True)
    assert [e.type for e in transcript.entries] == ["thinking", "tool"]
    assert res.result is None  # no result event


def test_claude_usage_falls_back_to_messages_without_a_result() -> None:
    state = claude_code.ClaudeState()
    builder = TranscriptBuilder("t")
    ctx = StreamContext(state, builder)
    usage = {"input_tokens": 10, "output_tokens": 3, "cache_creation_input_tokens": 7}
    for block in ("a", "b"):  # one API message, two content blocks: counted once
        message = {"id": "m1", "usage": usage, "content": [{"type": "text", "text": block}]}
        claude_code.on_line({"type": "assistant", "message": message}, ctx)
    claude_code._on_end(ctx)
    assert builder.transcript.usage == TokenUsage(input=10, output=3, cache_write_input=7)


def test_claude_command_line(tmp_path: Path) -> None:
    adapter = claude_code.NATIVE.adapter(BUILTINS["claude-code"], require_binary=False)
    inp = _input(tmp_path, model="claude-sonnet-4-5", flags={"max-turns": "3", "x": False})
    args = adapter.build_args(inp)
    assert args[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
    assert args[5:] == [
        "--permission-mode",
        "bypassPermissions",
        "--model",
        "claude-sonnet-4-5",
        "--max-turns",
        "3",
    ]
    assert adapter.prompt_via == "stdin"
    own = _input(tmp_path, flags={"permission-mode": "acceptEdits"})
    assert "bypassPermissions" not in adapter.build_args(own)
    env = adapter.isolation_env("/w", "/h") if adapter.isolation_env else {}
    assert env["CLAUDE_CONFIG_DIR"] == "/h/.claude" and env["IS_SANDBOX"] == "1"
    assert env["CLAUDE_CODE_MAX_RETRIES"] == "1" and env["XDG_CONFIG_HOME"] == "/h/.config"


# -- codex ------------------------------------------------------------------------------


def test_codex_events() -> None:
    events = [
        {"type": "thread.started", "thread_id": "th1"},
        {"type": "error", "message": "Reconnecting... 1/1 (x)"},
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
                "server": "fake",
                "tool": "echo",
                "arguments": {"text": "hi"},
                "result": {"content": [{"type": "text", "text": "MCP-ECHO:hi"}]},
                "status": "completed",
            },
        },
        {"type": "item.completed", "item": {"id": "i2", "type": "reasoning", "text": "think"}},
        {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "ok"}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 50},
        },
    ]
    state = codex.CodexState(model="gpt-5")
    res, transcript, _ = _feed(codex, state, events)
    assert res.result == "ok" and res.error is None and res.session_id == "th1"
    names = [(c.name, c.output) for c in transcript.tool_calls]
    assert names == [("file_change", "add: /w/a.txt"), ("mcp__fake__echo", "MCP-ECHO:hi")]
    # input_tokens include the cached part: recorded separately.
    assert transcript.usage == TokenUsage(input=600, output=50, cache_read_input=400)
    assert transcript.cost_estimated is True
    assert transcript.cost_usd == pytest.approx((600 * 1.25 + 50 * 10 + 400 * 0.125) / 1e6)


def test_codex_turn_failed() -> None:
    events = [
        {"type": "turn.started"},
        {"type": "error", "message": "Connection failed: error sending request"},
        {"type": "turn.failed", "error": {"message": "Connection failed: error sending request"}},
    ]
    res, transcript, _ = _feed(codex, codex.CodexState(), events, exit_code=1)
    assert res.result is None and res.error == "Connection failed: error sending request"
    assert transcript.cost_usd is None


def test_codex_config_toml(tmp_path: Path) -> None:
    inp = _input(tmp_path)
    inp = AdapterInput(
        **{
            **inp.__dict__,
            "endpoint": "http://127.0.0.1:9/",
            "mcp_servers": {
                "fake srv": McpStdioServer(
                    type="stdio", command="py", args=['a"b'], env={"K": "v\n"}
                ),
                "web": McpHttpServer(type="http", url="http://x/mcp", headers={"A": "b"}),
            },
        }
    )
    data = tomllib.loads(codex.config_toml(inp))
    provider = data["model_providers"]["axis"]
    assert data["model_provider"] == "axis"
    assert provider["base_url"] == "http://127.0.0.1:9/v1"
    assert provider["env_key"] == "CODEX_API_KEY" and provider["wire_api"] == "responses"
    assert provider["request_max_retries"] == 1 and provider["stream_max_retries"] == 1
    assert data["features"]["unbounded_connection_retries"] is False
    assert data["analytics"]["enabled"] is False
    assert data["mcp_servers"]["fake srv"] == {
        "command": "py",
        "args": ['a"b'],
        "env": {"K": "v\n"},
    }
    assert data["mcp_servers"]["web"] == {"url": "http://x/mcp", "http_headers": {"A": "b"}}
    plain = tomllib.loads(codex.config_toml(_input(tmp_path)))
    assert "model_provider" not in plain and "model_providers" not in plain


def test_codex_command_line(tmp_path: Path) -> None:
    adapter = codex.NATIVE.adapter(BUILTINS["codex"], require_binary=False)
    args = adapter.build_args(_input(tmp_path, model="gpt-5"))
    assert args == [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--model",
        "gpt-5",
    ]
    sandboxed = adapter.build_args(_input(tmp_path, flags={"sandbox": "workspace-write"}))
    assert "--dangerously-bypass-approvals-and-sandbox" not in sandboxed
    assert sandboxed[-2:] == ["--sandbox", "workspace-write"]


# -- gemini -----------------------------------------------------------------------------


def test_gemini_events_and_per_model_cost() -> None:
    stats = {
        "input_tokens": 300,
        "input": 250,
        "cached": 50,
        "output_tokens": 60,
        "models": {
            "gemini-2.5-flash-lite": {"input_tokens": 100, "input": 100, "output_tokens": 20},
            "gemini-2.5-flash": {
                "input_tokens": 200,
                "input": 150,
                "cached": 50,
                "output_tokens": 40,
            },
        },
    }
    events = [
        {"type": "init", "session_id": "s", "model": "auto"},
        {"type": "message", "role": "user", "content": "do it"},
        {"type": "message", "role": "assistant", "content": "I'll ", "delta": True},
        {"type": "message", "role": "assistant", "content": "run it.", "delta": True},
        {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "t", "parameters": {}},
        {
            "type": "tool_result",
            "tool_id": "t",
            "status": "error",
            "error": {"type": "x", "message": "denied"},
        },
        {"type": "error", "severity": "warning", "message": "loop?"},
        {"type": "message", "role": "assistant", "content": "Sorry.", "delta": True},
        {"type": "result", "status": "success", "stats": stats},
    ]
    res, transcript, _ = _feed(gemini, gemini.GeminiState(), events)
    assert res.result == "Sorry." and res.session_id == "s"
    assert [e.type for e in transcript.entries] == ["assistant", "tool", "system", "assistant"]
    call = transcript.tool_calls[0]
    assert (call.output, call.is_error) == ("denied", True)
    assert transcript.usage == TokenUsage(input=250, output=60, cache_read_input=50)
    lite = (100 * 0.10 + 20 * 0.40) / 1e6
    flash = (150 * 0.30 + 50 * 0.03 + 40 * 2.50) / 1e6
    assert transcript.cost_usd == pytest.approx(lite + flash) and transcript.cost_estimated
    assert transcript.model == "gemini-2.5-flash"


def test_gemini_error_result() -> None:
    events = [
        {"type": "init", "session_id": "s", "model": "gemini-x"},
        {"type": "error", "severity": "error", "message": "[API Error: fetch failed]"},
        {"type": "result", "status": "error", "error": {"type": "E", "message": "boom"}},
    ]
    res, transcript, _ = _feed(gemini, gemini.GeminiState(), events, exit_code=1)
    assert res.result is None and res.error == "boom"
    assert transcript.model == "gemini-x"


def test_gemini_command_line_and_settings(tmp_path: Path) -> None:
    adapter = gemini.NATIVE.adapter(BUILTINS["gemini"], require_binary=False)
    args = adapter.build_args(_input(tmp_path, model="gemini-2.5-pro"))
    assert args == [
        "--output-format",
        "stream-json",
        "--yolo",
        "--model",
        "gemini-2.5-pro",
        "-p",
        "",
    ]
    inp = _input(tmp_path)
    inp.env.update(adapter.isolation_env(inp.workspace, inp.home) if adapter.isolation_env else {})
    inp = AdapterInput(
        **{
            **inp.__dict__,
            "endpoint": "http://127.0.0.1:5/",
            "mcp_servers": {"f": McpStdioServer(type="stdio", command="py")},
        }
    )
    assert adapter.prepare is not None
    adapter.prepare(inp)
    settings = json.loads((Path(inp.home) / ".gemini" / ".gemini" / "settings.json").read_text())
    assert settings["mcpServers"] == {"f": {"command": "py", "args": []}}
    assert settings["general"]["maxAttempts"] == 1
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert inp.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:5"
    assert Path(inp.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text().strip() == "{}"


# -- shared pieces ----------------------------------------------------------------------


def test_mcp_files_for_claude(tmp_path: Path) -> None:
    servers = {
        "a": McpStdioServer(type="stdio", command="x"),
        "b": McpHttpServer(type="http", url="http://h", headers={"Authorization": "Bearer t"}),
    }
    path = mcp_files.write_claude_mcp(tmp_path, servers)
    assert path is not None and path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {
        "mcpServers": {
            "a": {"type": "stdio", "command": "x"},
            "b": {"type": "http", "url": "http://h", "headers": {"Authorization": "Bearer t"}},
        }
    }
    assert mcp_files.write_claude_mcp(tmp_path / "none", {}) is None


def test_skills_resolution(tmp_path: Path) -> None:
    (tmp_path / "root-skill").mkdir()
    (tmp_path / "root-skill" / "SKILL.md").write_text("root")
    nested = tmp_path / "pack" / "b-skill"
    nested.mkdir(parents=True)
    (nested / "SKILL.md").write_text("nested")
    (tmp_path / "pack" / ".hidden").mkdir()
    (tmp_path / "pack" / ".hidden" / "SKILL.md").write_text("hidden")
    (nested / ".git").mkdir()
    (tmp_path / "empty").mkdir()
    assert skills.resolve_skill("./root-skill", str(tmp_path)).folder == tmp_path / "root-skill"
    found = skills.resolve_skill("./pack", str(tmp_path))
    assert (found.name, found.folder) == ("pack", nested)
    target = tmp_path / "out"
    skills.install_skills(["./pack", "./root-skill"], str(tmp_path), target)
    assert (target / "pack" / "SKILL.md").read_text() == "nested"
    assert not (target / "pack" / ".git").exists()
    problems = skills.check_sources(
        ["./empty", "./missing", "owner/repo", "https://github.com/o/r.git", "x y"], str(tmp_path)
    )
    assert "No SKILL.md found" in problems[0] and "folder not found" in problems[1]
    # GitHub skills are fetched in pre-flight (tests/cli/test_git_sources.py): until then,
    # their cache folder is missing.
    assert "not fetched yet" in problems[2] and "not fetched yet" in problems[3]
    assert problems[4].startswith("Invalid skill source")


def test_prices() -> None:
    assert prices.normalize_model("models/claude-sonnet-4-5-20250929[1m]") == "claude-sonnet-4-5"
    assert prices.estimate_cost("no-such-model", TokenUsage(input=10)) is None
    usage = TokenUsage(input=1_000_000, output=1_000_000, cache_read_input=1_000_000)
    assert prices.estimate_cost("gpt-5", usage) == pytest.approx(1.25 + 10 + 0.125)


def test_flags_and_versions(tmp_path: Path) -> None:
    assert _native.flag_args({"a": True, "b": False, "c": "v", "-d": True}) == [
        "--a",
        "--c",
        "v",
        "-d",
    ]
    assert _native.parse_version("codex-cli 0.171.0") == "0.171.0"
    assert _native.parse_version("2.1.197 (Claude Code)") == "2.1.197"
    pkg = tmp_path / "node_modules" / "@x" / "cli"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text('{"name": "@x/cli", "version": "1.2.3"}')
    (pkg / "bin" / "cli.js").write_text("")
    assert _native.package_version(str(pkg / "bin" / "cli.js")) == "1.2.3"
    assert _native.package_version(str(tmp_path)) is None


def test_builtins_route_by_protocol() -> None:
    for name in ("claude-code", "codex", "gemini"):
        try:
            adapter = load_builtin(BUILTINS[name])
        except AdapterLoadError as exc:  # the CLI is not installed here
            assert exc.hint is not None and f"axis agents install {name}" in exc.hint
        else:
            assert adapter.name == name and adapter.prompt_via == "stdin"
    try:
        acp = load_builtin(BUILTINS["gemini-acp"])
    except AdapterLoadError as exc:
        assert "not available yet" in exc.message or "install" in (exc.hint or exc.message)
    else:
        assert acp.name == "gemini-acp"


def test_model_args_yield_to_a_model_flag() -> None:
    """``model`` becomes ``--model M`` unless ``flags`` already sets it (or an alias)."""
    from axis_eval.adapters._native import model_args
    from axis_eval.adapters.base import AdapterInput
    from axis_eval.planning.models import AgentSpec

    def inp(flags: dict[str, str | bool]) -> AdapterInput:
        agent = AgentSpec(name="a", adapter="codex", model="m-1", flags=flags)
        return AdapterInput(prompt="p", agent=agent, workspace="/w", home="/h", env={})

    assert model_args(inp({})) == ["--model", "m-1"]
    assert model_args(inp({"model": "other"})) == []
    assert model_args(inp({"m": "other"}), "m") == []
    assert model_args(inp({"m": "other"})) == ["--model", "m-1"]  # no alias given
