"""Each native built-in runs a real shell command chosen by the scripted model, then answers."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from axis_eval._types import TokenUsage
from axis_eval.adapters import install, prices
from axis_model_server import ScriptedModelServer, parse_tape
from helpers import system_parts

from .helpers import CODEX_MODEL, TRAP_VARS, axis_run, parent_env, shell_tape, write_project

pytestmark = pytest.mark.slow  # drives a real agent CLI against the scripted model server

COMMAND = "echo hello > out.txt && cat out.txt"
FINAL = "Done: out.txt now says hello."

SHELL_TOOL = {"claude-code": "Bash", "codex": "shell", "gemini": "run_shell_command"}


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _run(agent: str, tmp_path: Path, model: str | None = None) -> tuple[Any, ScriptedModelServer]:
    with ScriptedModelServer(parse_tape(shell_tape(COMMAND, FINAL))) as server:
        entry: dict[str, Any] = {"agent": agent, "endpoint": server.url}
        if model:
            entry["model"] = model
        root = write_project(
            tmp_path / "project",
            entry,
            "Create out.txt containing hello",
            env=TRAP_VARS,
            artifacts=["out.txt"],
        )
        view = axis_run(root, parent_env(tmp_path, proxy=server.url))
    return view, server


def _check_common(view: Any, server: ScriptedModelServer, agent: str) -> None:
    run = view.run
    assert view.exit_code == 0, run
    assert run["status"] == "completed" and run["failed"] is False, run
    assert run["exitCode"] == 0
    assert run["result"] == FINAL
    # The default sandbox confined it (bwrap on every test machine with it).
    assert run["sandbox"] == system_parts.auto_sandbox()
    # The file the shell command wrote, collected as an artifact.
    [artifact] = run["artifacts"]
    assert artifact["path"] == "out.txt"
    assert (view.report_dir / artifact["file"]).read_text() == "hello\n"
    # The tool call with its real output and timing.
    [call] = view.tools
    assert call["name"] == SHELL_TOOL[agent]
    assert "echo hello > out.txt" in str(call["input"])
    assert call["output"].strip() == "hello"
    assert call["isError"] is False
    assert call["outputBytes"] >= 5 and call["inputBytes"] > 0
    assert call["durationMs"] is not None and call["durationMs"] >= 0
    assert _when(call["startedAt"]) <= _when(call["endedAt"])
    kinds = [e["type"] for e in view.transcript["entries"] if e["type"] != "system"]
    assert kinds == ["user", "assistant", "tool", "assistant"], kinds
    # The exact CLI version (the pinned one from the cache).
    assert run["agentVersion"] == install.PINS[agent].version
    assert view.transcript["agentVersion"] == install.PINS[agent].version
    # No outside connection: HTTPS_PROXY/HTTP_PROXY pointed at the server, which traps CONNECTs.
    assert server.connect_attempts == []
    assert all(r.status == 200 for r in server.requests), server.requests
    assert not any(r.unmatched for r in server.requests)


def _tokens(view: Any) -> TokenUsage:
    return TokenUsage.model_validate(view.run["tokenUsage"])


def test_claude_code_runs_a_shell_command(claude_cli: Path, tmp_path: Path) -> None:
    view, server = _run("claude-code", tmp_path)
    _check_common(view, server, "claude-code")
    totals = server.usage_totals()
    # With the traffic-off variables Claude Code makes no side calls: two model requests.
    assert totals.requests == 2 and totals.side_requests == 0
    usage = _tokens(view)
    assert (usage.input, usage.output) == (totals.all.input_tokens, totals.all.output_tokens)
    assert usage.cache_read_input == 0 and usage.cache_write_input == 0
    # Claude Code computes its own cost; it is reported, not estimated.
    assert view.run["totalCostUsd"] is not None and view.run["totalCostUsd"] > 0
    assert view.run["costEstimated"] is False
    assert view.transcript["sessionId"]


def test_codex_runs_a_shell_command(codex_cli: Path, tmp_path: Path) -> None:
    view, server = _run("codex", tmp_path, model=CODEX_MODEL)
    _check_common(view, server, "codex")
    totals = server.usage_totals()
    assert totals.requests == 2 and totals.side_requests == 0
    usage = _tokens(view)
    assert (usage.input, usage.output) == (totals.all.input_tokens, totals.all.output_tokens)
    # Codex reports no cost: estimated from the price table, and marked so.
    assert view.run["costEstimated"] is True
    assert view.run["totalCostUsd"] == pytest.approx(prices.estimate_cost(CODEX_MODEL, usage))
    assert view.transcript["model"] == CODEX_MODEL
    assert view.tools[0]["kind"] == "command_execution"


def test_gemini_runs_a_shell_command(gemini_cli: Path, tmp_path: Path) -> None:
    view, server = _run("gemini", tmp_path)
    _check_common(view, server, "gemini")
    totals = server.usage_totals()
    # Without -m, Gemini CLI's model router asks a classifier first: one side request
    # (JSON answer). Gemini counts it in its own stats, so the transcript equals the
    # server's total over *all* requests, not just the conversation's.
    assert totals.requests == 3 and totals.side_requests == 1
    usage = _tokens(view)
    assert (usage.input, usage.output) == (totals.all.input_tokens, totals.all.output_tokens)
    assert usage.total > totals.main.input_tokens + totals.main.output_tokens
    # The router picks a model the price table does not know: no cost rather than a guess.
    assert view.run["totalCostUsd"] is None and view.run["costEstimated"] is False
