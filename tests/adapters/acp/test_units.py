"""The pieces under the ACP adapter: the stdin pipe, the factory, built-ins, mapping."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import pytest

from axis_eval._types import TokenUsage
from axis_eval.adapters._acp_transcript import AcpTranscript, content_text, prompt_usage
from axis_eval.adapters.acp import AcpAdapter, builtin_acp_adapter, create_acp_adapter
from axis_eval.adapters.base import AdapterConfigError, AdapterInput
from axis_eval.adapters.builtins import BUILTINS
from axis_eval.adapters.loader import load_adapter
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.errors import PreflightError
from axis_eval.execute.process import ProcessSpec, new_run_token, spawn
from axis_eval.planning.models import AgentSpec

from .helpers import REPO

ECHO = REPO / "tests" / "agents" / "proc_echo.py"


# -- the persistent stdin pipe of execute/process.py --------------------------------------


async def test_stdin_pipe_stays_open_until_closed(tmp_path: Path) -> None:
    marker = f"{new_run_token()}/1"
    spec = ProcessSpec([sys.executable, str(ECHO)], str(tmp_path), {}, marker, stdin_pipe=True)
    proc = await spawn(spec)
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"first\n")
        await proc.stdin.drain()
        await asyncio.sleep(0.2)
        assert proc.returncode is None  # still waiting for more input
        proc.stdin.write(b"second\n")
        proc.stdin.close()  # EOF: the echo agent copies everything and exits
        out = await asyncio.wait_for(proc.stdout.read(), 10)
        assert out == b"first\nsecond\n"
        assert await asyncio.wait_for(proc.wait(), 10) == 0
    finally:
        await proc.stop(0.5)


async def test_stdin_defaults_to_dev_null_and_cannot_mix_with_data(tmp_path: Path) -> None:
    marker = f"{new_run_token()}/1"
    proc = await spawn(ProcessSpec([sys.executable, str(ECHO)], str(tmp_path), {}, marker))
    try:
        assert proc.stdin is None
        assert await asyncio.wait_for(proc.stdout.read(), 10) == b""
    finally:
        await proc.stop(0.5)
    with pytest.raises(ValueError, match="cannot be combined"):
        await spawn(
            ProcessSpec(["true"], str(tmp_path), {}, marker, stdin_data=b"x", stdin_pipe=True)
        )


# -- create_acp_adapter ----------------------------------------------------------------


def test_create_acp_adapter_builds_an_agent_adapter() -> None:
    adapter = create_acp_adapter(
        name=" my-acp ",
        command=["my-cli", "--acp"],
        required_env=["MY_KEY"],
        optional_env=["MY_BASE_URL"],
    )
    assert isinstance(adapter, AcpAdapter)
    assert adapter.name == "my-acp"
    assert adapter.required_env == ("MY_KEY",)
    assert adapter.optional_env == ("MY_BASE_URL",)
    inp = _input(AgentSpec(name="a", adapter="my-acp"))
    assert adapter.resolve_command is not None
    assert adapter.resolve_command(inp) == ["my-cli", "--acp"]
    assert adapter.build_args(inp) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "name"),
        ({"command": []}, "command"),
        ({"command": "gemini --acp"}, "command"),
        ({"required_env": "KEY"}, "required_env"),
        ({"prepare": 3}, "prepare"),
        ({"extract_usage": "x"}, "extract_usage"),
    ],
)
def test_create_acp_adapter_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"name": "x", "command": ["x"], **kwargs}
    with pytest.raises(AdapterConfigError, match=message):
        create_acp_adapter(**args)  # type: ignore[arg-type]


# -- built-ins -------------------------------------------------------------------------


def _input(agent: AgentSpec, home: str = "/h", **env: str) -> AdapterInput:
    return AdapterInput(
        prompt="p",
        agent=agent,
        workspace="/w",
        home=home,
        env={"HOME": home, **env},
        endpoint="http://127.0.0.1:8765/",
    )


class _Notes:
    def warn(self, key: str, message: str) -> bool:
        return True

    def output_grew(self) -> None:
        pass


def test_an_acp_adapter_is_read_by_a_session_and_others_by_their_stream() -> None:
    from axis_eval.adapters._acp_session import AcpSession
    from axis_eval.adapters.readers import open_reader
    from axis_eval.adapters.streams import StreamReader

    inp = _input(AgentSpec(name="a", adapter="my-acp"))
    acp_adapter = create_acp_adapter(name="my-acp", command=["my-cli", "--acp"])
    session = open_reader(acp_adapter, inp, TranscriptBuilder("my-acp"), _Notes())
    assert isinstance(session, AcpSession) and session.converses
    assert session.stdin_data() is None  # the prompt goes in session/prompt
    stream = load_adapter(BUILTINS["claude-code"], require_binary=False)
    reader = open_reader(stream, inp, TranscriptBuilder("claude-code"), _Notes())
    assert isinstance(reader, StreamReader) and not reader.converses
    assert reader.stdin_data() == b"p"  # claude-code reads the prompt on stdin


def test_claude_sdk_environment_and_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    binary = tmp_path / "claude-agent-acp"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    adapter = builtin_acp_adapter(BUILTINS["claude-sdk"])
    assert isinstance(adapter, AcpAdapter)
    assert adapter.required_env == ("ANTHROPIC_API_KEY",)
    assert "ANTHROPIC_BASE_URL" in adapter.optional_env
    assert adapter.isolation_env is not None
    iso = adapter.isolation_env("/w", "/h")
    assert iso["CLAUDE_CONFIG_DIR"] == "/h/.claude"
    for key, value in {
        "CLAUDE_CODE_MAX_RETRIES": "1",
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }.items():
        assert iso[key] == value
    agent = AgentSpec(name="c", adapter="claude-sdk", model="claude-x", flags={"verbose": True})
    inp = _input(agent)
    assert adapter.resolve_command is not None
    assert adapter.resolve_command(inp) == [str(binary)]
    assert adapter.build_args(inp) == ["--model", "claude-x", "--verbose"]
    assert adapter.spawn_env is not None
    assert adapter.spawn_env(inp) == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8765",
        "ANTHROPIC_MODEL": "claude-x",
    }


def test_gemini_acp_settings_and_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    binary = tmp_path / "gemini"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    adapter = builtin_acp_adapter(BUILTINS["gemini-acp"])
    assert isinstance(adapter, AcpAdapter)
    home = tmp_path / "home"
    assert adapter.isolation_env is not None
    iso = adapter.isolation_env("/w", str(home))
    assert iso["GEMINI_CLI_HOME"] == f"{home}/.gemini"
    assert iso["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    inp = _input(AgentSpec(name="g", adapter="gemini-acp"), str(home), **iso)
    assert adapter.resolve_command is not None
    assert adapter.resolve_command(inp) == [str(binary), "--acp", "--skip-trust"]
    assert adapter.build_args(inp) == []
    assert adapter.spawn_env is not None
    assert adapter.spawn_env(inp) == {"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8765"}
    assert adapter.prepare is not None
    adapter.prepare(inp)
    settings = json.loads((home / ".gemini" / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["general"]["maxAttempts"] == 2
    assert "mcpServers" not in settings  # they travel in session/new


def test_every_acp_builtin_loads_or_fails_preflight(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    for builtin in BUILTINS.values():
        if builtin.protocol != "acp":
            continue
        with pytest.raises(PreflightError, match="not installed"):
            builtin_acp_adapter(builtin)
        adapter = builtin_acp_adapter(builtin, require_binary=False)
        assert adapter.name == builtin.name
        assert adapter.isolation_env is not None
        assert adapter.isolation_env("/w", "/h")["XDG_CONFIG_HOME"] == "/h/.config"
    with pytest.raises(AdapterConfigError, match="does not speak ACP"):
        builtin_acp_adapter(BUILTINS["claude-code"])


def test_the_loader_builds_acp_builtins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    binary = tmp_path / "goose"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "empty-cache"))
    adapter = load_adapter(BUILTINS["goose"])
    assert isinstance(adapter, AcpAdapter)
    inp = _input(AgentSpec(name="g", adapter="goose", model="ignored", flags={"x": True}))
    assert adapter.resolve_command is not None
    assert adapter.resolve_command(inp) == [str(binary), "acp"]
    assert adapter.build_args(inp) == []  # like AXIS: only some ACP agents take model/flags


# -- update mapping --------------------------------------------------------------------


def test_content_text_and_usage_shapes() -> None:
    content = [
        {"type": "content", "content": {"type": "text", "text": "a"}},
        {"type": "diff", "path": "/w/f.py", "oldText": "x", "newText": "y"},
        {"type": "terminal", "terminalId": "t1"},
        {"type": "content", "content": {"type": "image", "data": "..."}},
    ]
    assert content_text(content) == "a\n[diff: /w/f.py]\n[terminal: t1]\n[image]"
    assert prompt_usage({"usage": {"inputTokens": 5, "outputTokens": 2}}) == TokenUsage(
        input=5, output=2
    )
    gemini = {"_meta": {"quota": {"token_count": {"input_tokens": 7, "output_tokens": 1}}}}
    assert prompt_usage(gemini) == TokenUsage(input=7, output=1)
    assert prompt_usage({"stopReason": "end_turn"}) is None


def test_updates_map_to_entries_in_order() -> None:
    builder = TranscriptBuilder("x")
    acp = AcpTranscript(builder)
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}
    acp.update({**chunk, "messageId": "1"})
    acp.update({**chunk, "messageId": "1", "content": {"type": "text", "text": "b"}})
    acp.update({**chunk, "messageId": "2", "content": {"type": "text", "text": "c"}})
    acp.update({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "kind": "read"})
    acp.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": "no such"}}],
        }
    )
    acp.update(
        {"sessionUpdate": "usage_update", "used": 9, "cost": {"amount": 1, "currency": "EUR"}}
    )
    acp.update({"sessionUpdate": "some_future_update", "x": 1})
    acp.update("not an object")
    acp.finish()
    entries = builder.transcript.entries
    assert [(e.type, e.text) for e in entries] == [
        ("assistant", "ab"),
        ("assistant", "c"),
        ("tool", None),
    ]
    call = entries[2].tool
    assert call is not None
    assert (call.name, call.kind, call.output, call.is_error) == ("Read", "read", "no such", True)
    assert acp.usage_update == TokenUsage(input=9)
    assert acp.cost_usd is None  # not in US dollars


# -- the documented example ------------------------------------------------------------


async def test_the_documented_acp_adapter_loads_and_runs(tmp_path: Path) -> None:
    from axis_eval.adapters.registry import CustomAdapterRef
    from axis_eval.execute.supervise import RunControl, run_agent

    docs = (REPO / "docs" / "acp.md").read_text()
    block = re.findall(r"```python\n(.*?)```", docs, flags=re.DOTALL)[0]
    path = tmp_path / "my_acp.py"
    path.write_text(block)
    adapter = load_adapter(CustomAdapterRef(name="my-acp", python_file=str(path)))
    assert isinstance(adapter, AcpAdapter)
    assert adapter.required_env == ("MY_API_KEY",)
    assert adapter.isolation_env is not None
    assert adapter.isolation_env("/w", "/h") == {"MY_CLI_HOME": "/h/.my-cli"}

    work = tmp_path / "work"
    work.mkdir()
    fake = [sys.executable, str(Path(__file__).with_name("fake_acp_agent.py"))]
    inp = AdapterInput(
        prompt="write it",
        agent=AgentSpec(name="my-acp", adapter="my-acp", command=fake),
        workspace=str(work),
        home=str(tmp_path),
        env={"PATH": "/usr/bin:/bin"},
        endpoint="http://127.0.0.1:1",
        time_limit_s=60,
    )
    out = await run_agent(adapter, inp, RunControl(marker=f"{new_run_token()}/1"))
    assert not out.failed, out.error
    assert out.result == "Done (permission once; read b)."
    assert (work / "out.txt").read_text() == "hi\n"


# -- warnings --------------------------------------------------------------------------


async def test_repeated_acp_warnings_are_capped_and_counted(tmp_path: Path) -> None:
    """Ten of a kind are kept; the rest are counted, worded as the ACP path always was."""
    from axis_eval.execute.supervise import RunControl, run_agent

    fake = Path(__file__).with_name("fake_acp_agent.py")
    bad_update = {  # a plan whose entries are not a list: the update cannot be read
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "sess-1", "update": {"sessionUpdate": "plan", "entries": 5}},
    }
    code = (  # 15 unreadable updates and 15 lines that are not JSON, then the fake agent
        "import os, sys\n"
        f"for i in range(15): print({json.dumps(bad_update)!r}); print('noise', i)\n"
        "sys.stdout.flush()\n"
        f"os.execv(sys.executable, [sys.executable, {str(fake)!r}])\n"
    )
    adapter = create_acp_adapter(name="noisy-acp", command=[sys.executable, "-c", code])
    work = tmp_path / "work"
    work.mkdir()
    inp = AdapterInput(
        prompt="write it",
        agent=AgentSpec(name="noisy-acp", adapter="noisy-acp"),
        workspace=str(work),
        home=str(tmp_path),
        env={"PATH": "/usr/bin:/bin"},
        time_limit_s=60,
    )
    out = await run_agent(adapter, inp, RunControl(marker=f"{new_run_token()}/1", grace_s=0.5))
    assert not out.failed, out.error
    unreadable = "a session/update could not be read: TypeError: 'int' object is not iterable"
    noise = [f"the agent printed a stdout line that is not JSON-RPC: noise {i}" for i in range(10)]
    assert out.warnings == [
        *[w for pair in zip([unreadable] * 10, noise, strict=True) for w in pair],
        "… and 5 more update warnings",
        "… and 5 more stdout lines that are not JSON",
    ]
