"""Failure modes of the native built-ins: each ends fast with a clear error."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from axis_eval.errors import PreflightError

from .helpers import CODEX_MODEL, axis_run, closed_port, parent_env, write_project

pytestmark = pytest.mark.slow  # drives a real agent CLI against the scripted model server


@pytest.mark.parametrize(
    ("agent", "needle"),
    [
        ("claude-code", "Unable to connect to API"),
        ("codex", "Connection failed"),
        ("gemini", "fetch failed"),
    ],
)
def test_model_server_down_fails_fast(
    agent: str, needle: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue(
        {"claude-code": "claude_cli", "codex": "codex_cli"}.get(agent, "gemini_cli")
    )
    entry: dict[str, Any] = {"agent": agent, "endpoint": f"http://127.0.0.1:{closed_port()}"}
    if agent == "codex":
        entry["model"] = CODEX_MODEL
    root = write_project(tmp_path / "project", entry, "Create out.txt")
    started = time.monotonic()
    view = axis_run(root, parent_env(tmp_path))
    elapsed = time.monotonic() - started
    # Retries are bounded (Claude: CLAUDE_CODE_MAX_RETRIES=1; Codex: request/stream retries
    # 1 and no unbounded reconnects; Gemini: general.maxAttempts=1, no fetch-error retries).
    assert elapsed < 15, f"{agent} took {elapsed:.1f}s to give up"
    assert view.run["status"] == "failed" and view.run["failed"] is True
    assert view.run["errorKind"] == "agent"
    assert needle in view.run["error"], view.run["error"]
    assert view.run["result"] is None
    assert view.exit_code == 1


def test_missing_cli_fails_preflight_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-agents"
    empty.mkdir()
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(empty))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no claude here
    root = write_project(tmp_path / "project", {"agent": "claude-code"}, "Create out.txt")
    with pytest.raises(PreflightError) as info:
        axis_run(root, parent_env(tmp_path))
    assert "'claude-code'" in info.value.message and "not installed" in info.value.message
    assert info.value.hint is not None
    assert "axis agents install claude-code" in info.value.hint
    assert not (root / ".axis").exists(), "nothing may run or be written before pre-flight"


def test_non_zero_exit_is_a_failed_run(claude_cli: Path, tmp_path: Path) -> None:
    entry = {
        "agent": "claude-code",
        "endpoint": f"http://127.0.0.1:{closed_port()}",
        "flags": {"no-such-flag-for-axis": True},
    }
    root = write_project(tmp_path / "project", entry, "Create out.txt")
    view = axis_run(root, parent_env(tmp_path))
    assert view.run["status"] == "failed"
    assert view.run["exitCode"] not in (0, None)
    assert "no-such-flag-for-axis" in view.run["error"], view.run["error"]


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_garbage_output_is_a_failed_run_with_warnings(claude_cli: Path, tmp_path: Path) -> None:
    fake = _script(tmp_path / "claude", "echo 'this is not json'\necho '<html>'\nexit 0\n")
    root = write_project(
        tmp_path / "project", {"agent": "claude-code", "command": [str(fake)]}, "Create out.txt"
    )
    view = axis_run(root, parent_env(tmp_path))
    assert view.run["status"] == "failed"
    assert view.run["error"].startswith("Agent produced no output it could read")
    assert view.run["agentVersion"] is None  # a wrapper script is never asked its version
    raw = (view.report_dir / view.run["dir"] / "raw.txt").read_text()
    assert "this is not json" in raw


def test_a_hang_is_stopped_at_the_time_limit(claude_cli: Path, tmp_path: Path) -> None:
    init = '{"type":"system","subtype":"init","claude_code_version":"9.9.9","session_id":"s1"}'
    fake = _script(tmp_path / "claude", f"echo '{init}'\nexec sleep 300\n")
    root = write_project(
        tmp_path / "project",
        {"agent": "claude-code", "command": [str(fake)]},
        "Create out.txt",
        scenario={"limits": {"time_minutes": 0.03}},
    )
    started = time.monotonic()
    view = axis_run(root, parent_env(tmp_path))
    assert time.monotonic() - started < 15
    assert view.run["status"] == "failed"
    assert view.run["errorKind"] == "timeout"
    assert view.run["error"].startswith("Scenario time limit reached")
    assert view.run["agentVersion"] == "9.9.9"  # from the stream, even on a timeout
    assert view.transcript["sessionId"] == "s1"
