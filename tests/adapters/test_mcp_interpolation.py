"""``${VAR}`` in MCP header and env values: filled from the run's environment, checked before
any job starts, redacted in everything the run writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from axis_eval.adapters.mcp_files import (
    McpVariableMissing,
    interpolate_servers,
    interpolated_values,
    missing_variables,
)
from axis_eval.config.actions import McpHttpServer, McpStdioServer

TOKEN = "tok-7f3a9c1e5b2d4068"
"""A value that must reach the agent's MCP file and no report or transcript file."""


def _servers() -> dict[str, McpHttpServer | McpStdioServer]:
    return {
        "api": McpHttpServer(
            type="http",
            url="https://mcp.example/${NOT_INTERPOLATED}",
            headers={"Authorization": "Bearer ${MCP_TOKEN}", "X-Literal": "$${MCP_TOKEN}"},
        ),
        "local": McpStdioServer(
            type="stdio", command="srv", args=["${ARG}"], env={"KEY": "${LOCAL_KEY}-x"}
        ),
    }


def test_headers_and_env_values_are_filled_urls_and_args_are_not() -> None:
    out = interpolate_servers(_servers(), {"MCP_TOKEN": TOKEN, "LOCAL_KEY": "k1", "ARG": "a"})
    api, local = out["api"], out["local"]
    assert isinstance(api, McpHttpServer) and isinstance(local, McpStdioServer)
    assert api.headers == {"Authorization": f"Bearer {TOKEN}", "X-Literal": "${MCP_TOKEN}"}
    assert api.url == "https://mcp.example/${NOT_INTERPOLATED}"
    assert local.env == {"KEY": "k1-x"}
    assert local.args == ["${ARG}"]


def test_a_missing_variable_names_the_server_and_the_header() -> None:
    with pytest.raises(McpVariableMissing) as info:
        interpolate_servers(_servers(), {"LOCAL_KEY": "k1", "MCP_TOKEN": ""})
    assert info.value.message == (
        "MCP server 'api' header 'Authorization' uses ${MCP_TOKEN}, which is not set"
    )
    assert info.value.exit_code == 2
    assert missing_variables(_servers(), {}) == [
        ("api", "headers", "Authorization", "MCP_TOKEN"),
        ("local", "env", "KEY", "LOCAL_KEY"),
    ]


def test_the_redactor_learns_filled_values_not_escapes() -> None:
    values = interpolated_values(_servers(), {"MCP_TOKEN": TOKEN, "LOCAL_KEY": "k1-long"})
    assert values == [f"Bearer {TOKEN}", TOKEN, "k1-long-x", "k1-long"]


FAKE_CLAUDE = r"""
import json, sys
args = sys.argv[1:]
config = args[args.index("--mcp-config") + 1]
text = open(config).read()
open(COPY_TO, "w").write(text)
header = json.loads(text)["mcpServers"]["api"]["headers"]["Authorization"]
def say(event):
    print(json.dumps(event), flush=True)
say({"type": "system", "subtype": "init", "session_id": "s1", "claude_code_version": "9.9.9"})
reply = "the header was " + header
say({"type": "assistant", "message": {"id": "m1", "role": "assistant",
     "content": [{"type": "text", "text": reply}]}, "session_id": "s1"})
say({"type": "result", "subtype": "success", "is_error": False, "result": reply,
     "session_id": "s1", "num_turns": 1})
"""


def _project(tmp_path: Path, copy_to: Path) -> Path:
    fake = tmp_path / "fake-claude"
    fake.write_text(f"#!{sys.executable}\nCOPY_TO = {str(copy_to)!r}\n{FAKE_CLAUDE}")
    fake.chmod(0o755)
    root = tmp_path / "project"
    (root / "scenarios").mkdir(parents=True)
    config = {
        "agents": [{"agent": "claude-code", "command": [str(fake)]}],
        "mcp_servers": {
            "api": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
            }
        },
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    task = {"name": "task", "prompt": "Say the header", "judge": "it did"}
    (root / "scenarios" / "task.json").write_text(json.dumps(task))
    return root


def test_the_agents_mcp_file_has_the_value_and_no_report_file_does(
    tmp_path: Path, axis_process, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_to = tmp_path / "seen-mcp.json"
    root = _project(tmp_path, copy_to)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests-0000")
    monkeypatch.setenv("MCP_TOKEN", TOKEN)
    result = axis_process("run", "--no-score", "--sandbox", "none", cwd=root)
    assert result.exit_code == 0, result.stderr
    seen = json.loads(copy_to.read_text())
    assert seen["mcpServers"]["api"]["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    written = [p for p in (root / ".axis").rglob("*") if p.is_file()]
    transcripts = [p for p in written if p.name == "transcript.json"]
    assert transcripts, written
    assert "the header was " in transcripts[0].read_text()  # the agent's reply was kept
    for path in written:
        assert TOKEN not in path.read_text(errors="replace"), path
    assert TOKEN not in result.stdout + result.stderr


def test_a_missing_variable_stops_the_run_before_any_job(
    tmp_path: Path, axis_process, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_to = tmp_path / "seen-mcp.json"
    root = _project(tmp_path, copy_to)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests-0000")
    monkeypatch.delenv("MCP_TOKEN", raising=False)
    result = axis_process("run", "--no-score", "--sandbox", "none", cwd=root)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "MCP server 'api' header 'Authorization' uses ${MCP_TOKEN}, which is not set" in (
        result.stderr
    )
    assert "export MCP_TOKEN=" in result.stderr
    assert not copy_to.exists()  # no job started
    dry = axis_process("run", "--dry-run", cwd=root)
    assert dry.exit_code == 0, dry.stderr
    assert "uses ${MCP_TOKEN}, which is not set: `axis run` will stop" in dry.stderr + dry.stdout
