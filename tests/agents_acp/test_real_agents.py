"""Real ACP agents (claude-agent-acp, `gemini --acp`) against the scripted model server.

The model makes the agent run a shell command that writes a file and prints it, then
answers. Checked: the file, the tool call with its output and timing, tokens, the CLI
version, and that nothing tried to reach the outside (HTTPS_PROXY is a trap).
"""

from __future__ import annotations

import socket
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    agent_cli,
    base_environ,
    model_server_module,
    read_json,
    run_api,
    runs_by_key,
    tools,
    write_project,
)

COMMAND = "echo hi > out.txt && cat out.txt"
TAPE = textwrap.dedent(
    f"""\
    version: 1
    conversations:
      - name: write-out
        match: "write out.txt"
        turns:
          - text: "I'll write the file."
            tool_calls:
              - tool: shell
                args: {{command: "{COMMAND}"}}
          - text: "done"
    """
)
KEYS = {"claude-sdk": "ANTHROPIC_API_KEY", "gemini-acp": "GEMINI_API_KEY"}


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude-sdk", "gemini-acp"])
async def test_real_acp_agent_runs_a_scripted_shell_call(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_cli(agent, monkeypatch)
    server_mod = model_server_module()
    from axis_eval.adapters.install import PINS

    tape = tmp_path / "tape.yaml"
    tape.write_text(TAPE)
    with server_mod.ScriptedModelServer(server_mod.load_tape(tape)) as server:
        trap = {
            "HTTPS_PROXY": server.url,
            "HTTP_PROXY": server.url,
            "NO_PROXY": "127.0.0.1,localhost",
        }
        root = write_project(
            tmp_path / "proj",
            {
                "write": {
                    "prompt": "Please write out.txt",
                    "artifacts": ["out.txt"],
                    "limits": {"time_minutes": 1.5},
                }
            },
            adapters={},
            agents=[{"agent": agent, "endpoint": server.url}],
            env=sorted(trap),
        )
        environ = base_environ(**{KEYS[agent]: "sk-test"}, **trap)
        outcome = await run_api(root, environ)
        connects = server.connect_attempts
        totals = server.usage_totals()
    report = outcome.report_dir
    [run] = runs_by_key(read_json(report / "report.json")).values()
    folder = report / run["dir"]
    transcript = read_json(folder / "transcript.json")
    context = f"run={run}\nstderr={_stderr(folder)}"
    assert run["status"] == "completed", context
    assert run["result"] == "done", context

    # The file the shell command wrote (collected as an artifact).
    [artifact] = run["artifacts"]
    assert (report / artifact["file"]).read_text() == "hi\n"

    # The tool call: started, finished, with its input and real output.
    [call] = tools(transcript)
    assert COMMAND in call["name"] or COMMAND in str(call["input"]), call
    assert call["isError"] is False
    assert call["startedAt"] and call["endedAt"] and call["durationMs"] >= 0
    assert call["inputBytes"] > 0
    output_expected = _OUTPUT[agent]
    if output_expected is not None:
        assert call["output"].strip() == output_expected, call
        assert call["outputBytes"] > 0

    # Tokens as the agent reported them: the model server's count of the conversation.
    usage: dict[str, Any] = run["tokenUsage"]
    assert usage["input"] == totals.main.input_tokens > 0, (usage, totals)
    assert usage["output"] == totals.main.output_tokens > 0, (usage, totals)
    assert transcript["agentVersion"] == PINS[agent].version
    assert connects == [], connects


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude-sdk", "gemini-acp"])
async def test_model_server_down_fails_fast_and_clearly(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_cli(agent, monkeypatch)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = write_project(
        tmp_path / "proj",
        {"write": {"prompt": "Please write out.txt", "limits": {"time_minutes": 1}}},
        adapters={},
        agents=[{"agent": agent, "endpoint": f"http://127.0.0.1:{port}"}],
    )
    started = time.monotonic()
    outcome = await run_api(root, base_environ(**{KEYS[agent]: "sk-test"}))
    assert time.monotonic() - started < 30  # bounded retries, not the 1-minute limit
    [run] = runs_by_key(read_json(outcome.report_dir / "report.json")).values()
    assert run["status"] == "failed", run
    assert run["errorKind"] == "agent"
    assert run["error"].startswith("ACP session/prompt failed"), run["error"]
    assert _DOWN[agent] in run["error"], run["error"]
    assert run["exitCode"] == 1


_DOWN = {"claude-sdk": "Unable to connect to API", "gemini-acp": "fetch failed"}
_OUTPUT = {"claude-sdk": "hi", "gemini-acp": None}
"""The tool output each agent reports over ACP (None: it reports none)."""


def _stderr(folder: Path) -> str:
    path = folder / "stderr.log"
    return path.read_text()[-3000:] if path.exists() else ""
