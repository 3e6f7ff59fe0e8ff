"""MCP servers and skills reach Claude Code; the host's MCP configuration does not."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from axis_model_server import ScriptedModelServer, parse_tape

from .helpers import (
    CODEX_MODEL,
    MCP_ECHO,
    TRAP_VARS,
    axis_run,
    parent_env,
    shell_tape,
    tool_tape,
    write_project,
)

pytestmark = pytest.mark.slow  # drives a real agent CLI against the scripted model server


def _plant_host_mcp(home: Path, marker: Path) -> None:
    """MCP servers in every place a host Claude Code would look; starting one touches ``marker``."""
    leak = {"command": "/bin/sh", "args": ["-c", f"touch {marker}"]}
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"hostleak": leak}}))
    (home / ".claude" / ".claude.json").write_text(json.dumps({"mcpServers": {"hostleak": leak}}))
    (home / ".claude" / "settings.json").write_text(json.dumps({"mcpServers": {"hostleak": leak}}))
    (home / ".mcp.json").write_text(json.dumps({"mcpServers": {"hostleak": leak}}))


def test_claude_code_calls_an_mcp_tool_and_ignores_host_mcp(
    claude_cli: Path, tmp_path: Path
) -> None:
    # The MCP server runs beside the agent, in its sandbox: it may write only the job's
    # folders, so its log is a workspace file the run collects as an artifact.
    log_name = "echo-seen.jsonl"
    marker = tmp_path / "host-mcp-started"
    tape = tool_tape(
        "mcp__fake__echo", {"text": "ping"}, "The tool said MCP-ECHO:ping.", match="Echo"
    )
    with ScriptedModelServer(parse_tape(tape)) as server:
        env = parent_env(tmp_path, proxy=server.url)
        _plant_host_mcp(Path(env["HOME"]), marker)
        servers = {
            "fake": {
                "type": "stdio",
                "command": sys.executable,
                "args": [str(MCP_ECHO)],
                "env": {"MCP_ECHO_LOG": log_name},
            }
        }
        root = write_project(
            tmp_path / "project",
            {"agent": "claude-code", "endpoint": server.url},
            "Echo ping through the MCP server",
            env=TRAP_VARS,
            mcp_servers=servers,
            artifacts=[log_name],
        )
        view = axis_run(root, env)
    assert view.run["status"] == "completed", view.run
    log = next(view.report_dir.rglob(f"artifacts/{log_name}"))
    [call] = view.tools
    assert call["name"] == "mcp__fake__echo"
    assert call["input"] == {"text": "ping"}
    assert call["output"] == "MCP-ECHO:ping"
    assert call["isError"] is False
    [init] = [e for e in view.raw if e.get("type") == "system" and e.get("subtype") == "init"]
    assert [s["name"] for s in init["mcp_servers"]] == ["fake"]
    assert init["mcp_servers"][0]["status"] == "connected"
    assert not any("hostleak" in tool for tool in init["tools"])
    assert not marker.exists(), "a host MCP server was started"
    # The MCP config sat in the job's CLAUDE_CONFIG_DIR (under the job HOME), not the workspace.
    [seen] = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["config_has_mcp_json"] is True
    assert seen["config_dir"] == f"{seen['home']}/.claude"
    assert seen["home"] != env["HOME"] and seen["cwd"].endswith("/work")
    assert not any("mcp" in name for name in seen["workspace_files"]), seen
    assert server.connect_attempts == []


def test_skills_reach_claude_code(claude_cli: Path, tmp_path: Path) -> None:
    text = "Greet people with the word AXIS-SKILL-42."
    skill = tmp_path / "project" / "skills" / "greeting"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: greeting\ndescription: How to greet people\n---\n{text}\n"
    )
    (skill / "node_modules").mkdir()  # never copied
    command = 'cat "$CLAUDE_CONFIG_DIR/skills/greeting/SKILL.md"'
    with ScriptedModelServer(parse_tape(shell_tape(command, "I read the skill."))) as server:
        root = write_project(
            tmp_path / "project",
            {"agent": "claude-code", "endpoint": server.url, "skills": ["./skills/greeting"]},
            "Create out.txt? First read your greeting skill",
            env=TRAP_VARS,
        )
        view = axis_run(root, parent_env(tmp_path, proxy=server.url))
    assert view.run["status"] == "completed", view.run
    [call] = view.tools
    assert text in call["output"]
    [init] = [e for e in view.raw if e.get("type") == "system" and e.get("subtype") == "init"]
    assert "greeting" in init["skills"]


def test_an_unreachable_remote_skill_fails_pre_flight(
    claude_cli: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axis_eval.errors import PreflightError

    # GitHub points at a port nothing listens on: the test never leaves the machine.
    for name, value in {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url.git://127.0.0.1:1/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/",
    }.items():
        monkeypatch.setenv(name, value)
    root = write_project(
        tmp_path / "project",
        {"agent": "claude-code", "endpoint": "http://127.0.0.1:9", "skills": ["netlify/skills"]},
        "Create out.txt",
    )
    env = {**parent_env(tmp_path), **{k: v for k, v in os.environ.items() if k.startswith("GIT_")}}
    with pytest.raises(PreflightError, match=r"skill 'netlify/skills'.*github\.com/netlify/skills"):
        axis_run(root, env)
    assert not (root / ".axis" / "reports").exists()  # nothing ran, no report


def _echo_servers() -> dict[str, Any]:
    return {"fake": {"type": "stdio", "command": sys.executable, "args": [str(MCP_ECHO)]}}


def test_gemini_calls_an_mcp_tool(gemini_cli: Path, tmp_path: Path) -> None:
    # Gemini CLI names MCP tools mcp_<server>_<tool>; the tape's suffix `echo` matches it.
    tape = tool_tape("echo", {"text": "ping"}, "Echoed.", match="Echo")
    with ScriptedModelServer(parse_tape(tape)) as server:
        root = write_project(
            tmp_path / "project",
            {"agent": "gemini", "endpoint": server.url, "model": "gemini-2.5-flash"},
            "Echo ping through the MCP server",
            env=TRAP_VARS,
            mcp_servers=_echo_servers(),
        )
        view = axis_run(root, parent_env(tmp_path, proxy=server.url))
    assert view.run["status"] == "completed", view.run
    [call] = view.tools
    assert call["name"] == "mcp_fake_echo" and call["output"] == "MCP-ECHO:ping"
    # --model skips the router: tokens are the conversation's, and the cost is estimated.
    assert server.usage_totals().side_requests == 0
    assert view.run["costEstimated"] is True and view.run["totalCostUsd"] > 0
    assert server.connect_attempts == []


def test_codex_calls_an_mcp_tool(codex_cli: Path, tmp_path: Path) -> None:
    tape = tool_tape("echo", {"text": "ping"}, "Echoed.", match="Echo")
    with ScriptedModelServer(parse_tape(tape)) as server:
        root = write_project(
            tmp_path / "project",
            {"agent": "codex", "endpoint": server.url, "model": CODEX_MODEL},
            "Echo ping through the MCP server",
            mcp_servers=_echo_servers(),
        )
        view = axis_run(root, parent_env(tmp_path))
    assert view.run["status"] == "completed", view.run
    [call] = view.tools
    assert call["name"] == "mcp__fake__echo" and call["output"] == "MCP-ECHO:ping"
