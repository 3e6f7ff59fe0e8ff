"""Real ACP agents against the scripted model server: claude-agent-acp and `gemini --acp`
(required), Qwen Code and opencode (when installed).

The model makes the agent run a shell command that writes a file and prints it, then
answers. Checked: the file, the tool call with its output and timing, tokens, the CLI
version, and that nothing tried to reach the outside (HTTPS_PROXY is a trap).
"""

from __future__ import annotations

import socket
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers.processes import read_json

from .helpers import (
    agent_cli,
    base_environ,
    model_server_module,
    run_api,
    runs_by_key,
    tools,
    write_project,
)

pytestmark = pytest.mark.slow  # drives an ACP agent process end to end

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


@dataclass(frozen=True)
class Expect:
    """What one agent is known to do over ACP against the scripted server."""

    key: str
    """The API key variable it needs."""
    required: bool = True
    """False: an optional agent, skipped (even with CI=true) when not installed."""
    output: str | None = "hi"
    """The tool output it reports (stripped); None: it reports none over ACP."""
    exact_tokens: bool = True
    """Its reported usage equals the server's count of the conversation."""
    trap: bool = True
    """HTTPS_PROXY can point at the server (Qwen sends even loopback through it)."""
    outside: tuple[str, ...] = ()
    """Outside hosts it still tries to reach (blocked by the trap)."""


EXPECT = {
    "claude-sdk": Expect("ANTHROPIC_API_KEY"),
    "gemini-acp": Expect("GEMINI_API_KEY", output=None),
    "qwen-code": Expect("OPENAI_API_KEY", trap=False),
    "opencode": Expect(
        "OPENAI_API_KEY",
        exact_tokens=False,  # its session/prompt usage is the last model call's
        outside=("registry.npmjs.org",),  # the provider package; harmless when blocked
    ),
}
KEYS = {name: e.key for name, e in EXPECT.items()}


@pytest.mark.slow
@pytest.mark.parametrize("agent", list(EXPECT))
async def test_real_acp_agent_runs_a_scripted_shell_call(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expect = EXPECT[agent]
    agent_cli(agent, monkeypatch, required=expect.required)
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
        if not expect.trap:
            trap = {}
        root = write_project(
            tmp_path / "proj",
            {
                "write": {
                    "prompt": "Please write out.txt",
                    "artifacts": ["**/*"],
                    "limits": {"time_minutes": 1.5},
                }
            },
            adapters={},
            agents=[{"agent": agent, "endpoint": server.url}],
            env=[*sorted(trap), expect.key],
        )
        environ = base_environ(**{expect.key: "sk-test"}, **trap)
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

    # The file the shell command wrote, and nothing else: no permission rules or other
    # agent state were left in the workspace.
    assert [a["path"] for a in run["artifacts"]] == ["out.txt"], run["artifacts"]
    assert (report / run["artifacts"][0]["file"]).read_text() == "hi\n"

    # The tool call: started, finished, with its input and real output.
    [call] = tools(transcript)
    assert COMMAND in call["name"] or COMMAND in str(call["input"]), call
    assert call["isError"] is False
    assert call["startedAt"] and call["endedAt"] and call["durationMs"] >= 0
    assert call["inputBytes"] > 0
    if expect.output is not None:
        assert call["output"].strip() == expect.output, call
        assert call["outputBytes"] > 0

    # Tokens as the agent reported them (the model server's count of the conversation),
    # the CLI version, and no outside connection attempted.
    usage: dict[str, Any] = run["tokenUsage"]
    assert usage["input"] > 0 and usage["output"] > 0, usage
    if expect.exact_tokens:
        assert usage["input"] == totals.main.input_tokens, (usage, totals)
        assert usage["output"] == totals.main.output_tokens, (usage, totals)
    assert transcript["agentVersion"] == PINS[agent].version
    assert {c.host for c in connects} <= set(expect.outside), connects


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


def _stderr(folder: Path) -> str:
    path = folder / "stderr.log"
    return path.read_text()[-3000:] if path.exists() else ""
