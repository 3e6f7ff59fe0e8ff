"""The ACP adapter end to end through `axis run`, against a tiny scripted ACP agent."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from helpers.processes import alive, read_json, wait_dead, wait_for

from .helpers import (
    FAKE_ADAPTER,
    base_environ,
    cli_env,
    only_report,
    run_api,
    runs_by_key,
    start_cli,
    tools,
    write_project,
)

pytestmark = pytest.mark.slow  # drives an ACP agent process end to end

AGENT = "fake-acp"


def received(out: Path, key: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (out / f"received-{key}.jsonl").read_text().splitlines()]


async def test_a_session_becomes_a_normalized_transcript(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    root = write_project(
        tmp_path / "proj",
        {
            "plain": {"prompt": "write the file"},
            "gemini": {"prompt": "write the file [[gemini]] [[thought]] [[noise]]"},
        },
        env=["FAKE_ACP_DIR"],
        # The fake agent reports what it received in a folder outside its workspace.
        settings={"sandbox": {"writable": [str(out)]}},
        mcp_servers={
            "files": {"type": "stdio", "command": "mcp-files", "args": ["-v"], "env": {"K": "v"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "b"}},
        },
    )
    outcome = await run_api(root, base_environ(FAKE_ACP_DIR=str(out)))
    report = outcome.report_dir
    runs = runs_by_key(read_json(report / "report.json"))

    run = runs[("plain", AGENT)]
    assert run["status"] == "completed", run
    assert run["tokenUsage"] == {
        "input": 200,
        "output": 40,
        "cacheReadInput": 10,
        "cacheWriteInput": 0,
    }
    assert run["totalCostUsd"] == 0.25 and not run["costEstimated"]
    # Permission auto-allowed once (allow_always would let agents persist a rule in the
    # workspace); the fs handlers served a write (parents created) and a partial read.
    assert run["result"] == "Done (permission once; read b)."
    folder = report / run["dir"]
    transcript = read_json(folder / "transcript.json")
    assert transcript["sessionId"] == "sess-1"
    if "agentVersion" in transcript:
        assert transcript["agentVersion"] == "9.8.7"
    kinds = [e["type"] for e in transcript["entries"]]
    assert kinds == ["user", "assistant", "tool", "assistant"], kinds
    assert transcript["entries"][1]["text"] == "I'll write the file."
    [call] = tools(transcript)
    assert call["id"] == "call_1"
    assert call["name"] == "echo hi > out.txt"
    assert call["kind"] == "execute"
    assert call["input"] == {"command": "echo hi > out.txt"}
    assert call["inputBytes"] == len('{"command":"echo hi > out.txt"}')  # JSON.stringify
    assert call["output"] == "hi"
    assert call["outputBytes"] == 2
    assert call["isError"] is False
    assert call["durationMs"] >= 200  # the fake tool takes 0.2 s after the permission
    assert call["startedAt"] <= call["endedAt"]
    # Every message both ways is in raw.ndjson.
    raw = [json.loads(line) for line in (folder / "raw.ndjson").read_text().splitlines()]
    sent = [r["msg"].get("method") for r in raw if r["dir"] == "client->agent"]
    assert sent[:3] == ["initialize", "session/new", "session/prompt"]
    got = {r["msg"].get("method") for r in raw if r["dir"] == "agent->client"}
    assert {"session/update", "session/request_permission", "fs/write_text_file"} <= got
    # What the agent received: capabilities, client info, the workspace, MCP servers.
    messages = received(out, "plain")
    init = messages[1]["params"]
    assert init["clientCapabilities"]["fs"] == {"readTextFile": True, "writeTextFile": True}
    assert init["clientInfo"]["name"] == "axis-eval"
    new = messages[2]["params"]
    assert new["cwd"] == messages[0]["cwd"]  # the agent runs in the workspace it is told
    assert sorted(new["mcpServers"], key=lambda s: s["name"]) == [
        {
            "name": "files",
            "command": "mcp-files",
            "args": ["-v"],
            "env": [{"name": "K", "value": "v"}],
        },
        {
            "type": "http",
            "name": "web",
            "url": "http://127.0.0.1:9/mcp",
            "headers": [{"name": "X-A", "value": "b"}],
        },
    ]

    # Gemini's shape: the tool call starts at the permission request; usage from _meta.
    gem = runs[("gemini", AGENT)]
    assert gem["status"] == "completed", gem
    assert gem["tokenUsage"]["input"] == 300 and gem["tokenUsage"]["output"] == 30
    g_folder = report / gem["dir"]
    g_transcript = read_json(g_folder / "transcript.json")
    kinds = [e["type"] for e in g_transcript["entries"]]
    assert kinds == ["user", "thinking", "system", "assistant", "tool", "assistant"], kinds
    assert g_transcript["entries"][1]["text"] == "Let me think about it."
    assert "write the file" in g_transcript["entries"][2]["text"]
    [g_call] = tools(g_transcript)
    assert g_call["name"] == "echo hi > out.txt"
    assert g_call["input"] == {"title": "echo hi > out.txt", "description": "write hi to out.txt"}
    assert g_call["durationMs"] >= 200, g_call  # from the permission request on
    assert g_call["output"] == ""
    assert any("not JSON-RPC" in w for w in gem["warnings"]), gem["warnings"]
    raw_text = (g_folder / "raw.ndjson").read_text()
    assert "this line is not JSON" in raw_text and "_vendor/progress" in raw_text
    assert gem["exitCode"] == 0


async def test_stop_reasons_errors_failed_tools_and_crashes(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        {
            "max-tokens": {"prompt": "go [[stop:max_tokens]]"},
            "refusal": {"prompt": "go [[stop:refusal]]"},
            "failed-tool": {"prompt": "go [[fail_tool]]"},
            "rpc-error": {"prompt": "go [[error]]"},
            "crash": {"prompt": "go [[crash]]"},
            "garbage": {"prompt": "go", "agents": ["garbage"]},
            "missing": {"prompt": "go", "agents": ["missing"]},
        },
        adapters={"fake-acp": str(FAKE_ADAPTER)},
        agents=[
            "fake-acp",
            {
                "agent": "fake-acp",
                "name": "garbage",
                "command": ["sh", "-c", "echo not an ACP agent; echo oops >&2; exit 0"],
            },
            {"agent": "fake-acp", "name": "missing", "command": ["/no/such/acp-agent"]},
        ],
    )
    outcome = await run_api(root, base_environ())
    report = outcome.report_dir
    runs = runs_by_key(read_json(report / "report.json"))

    assert runs[("max-tokens", AGENT)]["error"] == "Agent hit max tokens limit"
    assert runs[("max-tokens", AGENT)]["status"] == "failed"
    assert runs[("refusal", AGENT)]["error"] == "Agent refused to continue"

    failed_tool = runs[("failed-tool", AGENT)]
    assert failed_tool["status"] == "completed", failed_tool
    [call] = tools(read_json(report / failed_tool["dir"] / "transcript.json"))
    assert call["isError"] is True

    rpc = runs[("rpc-error", AGENT)]
    assert rpc["status"] == "failed"
    assert rpc["errorKind"] == "agent"
    assert "session/prompt failed" in rpc["error"] and "model down" in rpc["error"]

    crash = runs[("crash", AGENT)]
    assert crash["status"] == "failed", crash
    assert crash["exitCode"] == 3
    assert "exited with non-zero code 3" in crash["error"]
    assert "the fake agent crashed" in crash["error"]
    transcript = read_json(report / crash["dir"] / "transcript.json")
    assert [e["text"] for e in transcript["entries"] if e["type"] == "assistant"] == [
        "I'll write the file."
    ]

    # Garbage on stdout and a clean exit: a clear error with stderr, the output kept.
    garbage = runs[("garbage", "garbage")]
    assert garbage["status"] == "failed", garbage
    assert garbage["error"].startswith("The agent closed the ACP connection during initialize")
    assert "oops" in garbage["error"]
    assert "not an ACP agent" in (report / garbage["dir"] / "raw.ndjson").read_text()

    missing = runs[("missing", "missing")]
    assert missing["status"] == "failed"
    assert missing["errorKind"] == "spawn"
    assert "/no/such/acp-agent" in missing["error"]


async def test_time_and_token_limits_stop_the_whole_group(
    tmp_path: Path, pids_to_kill: list[int]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    root = write_project(
        tmp_path / "proj",
        {
            "hang": {"prompt": "go [[hang]]", "limits": {"time_minutes": 0.03}},
            "tokens": {"prompt": "go [[tokens]]", "limits": {"tokens": 10_000}},
        },
        env=["FAKE_ACP_DIR"],
        # Host pids, checked on the host: the process control that contains a `none` job
        # (a bwrap job's namespace: tests/execute/sandbox/test_hostile_sandbox.py).
        settings={"sandbox": "none"},
    )
    outcome = await run_api(root, base_environ(FAKE_ACP_DIR=str(out)))
    runs = runs_by_key(read_json(outcome.report_dir / "report.json"))
    hang = runs[("hang", AGENT)]
    assert hang["errorKind"] == "timeout", hang
    assert hang["error"] == "Scenario time limit reached (1.8s)" or hang["error"].startswith(
        "Scenario time limit reached"
    )
    transcript = read_json(outcome.report_dir / hang["dir"] / "transcript.json")
    assert any(e.get("text") == "started, now hanging" for e in transcript["entries"])
    tokens = runs[("tokens", AGENT)]
    assert tokens["errorKind"] == "token_limit", tokens
    assert tokens["tokenUsage"]["input"] == 50_000
    for key in ("hang", "tokens"):
        pids = read_json(out / f"pids-{key}.json")
        pids_to_kill.extend(pids)
        wait_dead(pids, timeout=5)  # the agent, its child and its setsid child


def test_ctrl_c_cancels_the_session_and_stops_the_group(
    tmp_path: Path, pids_to_kill: list[int]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    root = write_project(
        tmp_path / "proj",
        {"hang": {"prompt": "go [[hang]]"}},
        env=["FAKE_ACP_DIR"],
        settings={"sandbox": "none"},  # host pids, as above
    )
    axis = start_cli(root, "--grace-seconds", "1", env=cli_env(FAKE_ACP_DIR=str(out)))
    try:
        pids = wait_for(
            lambda: (out / "pids-hang.json").exists() and read_json(out / "pids-hang.json"),
            timeout=30,
            what="the agent to start",
        )
        pids_to_kill.extend(pids)
        assert all(alive(p) for p in pids)
        axis.send_signal(signal.SIGINT)
        assert axis.wait(timeout=30) == 130
    finally:
        if axis.poll() is None:
            axis.kill()
            axis.wait()
    wait_dead(pids, timeout=5)
    report = only_report(root)
    run = runs_by_key(read_json(report / "report.json"))[("hang", AGENT)]
    assert run["status"] == "cancelled"
    assert run["error"] == "Run cancelled by SIGINT"
    transcript = read_json(report / run["dir"] / "transcript.json")
    assert any(e.get("text") == "started, now hanging" for e in transcript["entries"])
