"""Goal bootstrap with the real Gemini CLI against the scripted model server.

The pinned CLI comes from ``AXIS_AGENTS_DIR`` (``<repo>/.cache/agents``); when it is not
installed the tests are skipped loudly, or fail under ``CI=true``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from axis_eval.adapters import install
from axis_model_server import ScriptedModelServer, parse_tape
from helpers.system_parts import not_run

from .helpers import free_port, py_command, task_doc

pytestmark = pytest.mark.slow  # starts the task runner and its goal agents as processes

FAKE_KEY = "gk-axis-test-not-a-real-key"
GOAL = "BOOTSTRAP-GOAL-OK: create the BOOTSTRAPPED.txt marker"
TAPE = {
    "version": 1,
    "conversations": [
        {
            "name": "bootstrap",
            "match": "BOOTSTRAP-GOAL-OK",
            "turns": [
                {
                    "text": "Setting up.",
                    "tool_calls": [
                        {
                            "tool": "shell",
                            "args": {"command": "echo bootstrapped > BOOTSTRAPPED.txt"},
                        }
                    ],
                },
                {"text": "Workspace ready."},
            ],
        },
        {
            "name": "slow",
            "match": "SLOW-GOAL",
            "turns": [{"tool_calls": [{"tool": "shell", "args": {"command": "sleep 30"}}]}],
        },
    ],
}
RECORD = (
    "import os, pathlib; pathlib.Path(os.environ['OUT']).write_text("
    "str(pathlib.Path('BOOTSTRAPPED.txt').exists()))"
)


@pytest.fixture
def gemini() -> Path:
    found = install.installed_binary("gemini")
    if found is None:
        not_run(
            "GOAL BOOTSTRAP TEST",
            f"the pinned Gemini CLI is not installed in {install.agents_dir()} "
            "(run `axis agents install gemini`)",
        )
    return found


def _env(tmp_path: Path, endpoint: str, **extra: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "GEMINI_API_KEY": FAKE_KEY,
        "AX_MODEL_BASE_URL": endpoint,
        "HTTPS_PROXY": endpoint,  # the scripted server doubles as a proxy trap
        "HTTP_PROXY": endpoint,
        "NO_PROXY": "127.0.0.1,localhost",
        "OUT": str(tmp_path / "command-saw.txt"),
        **extra,
    }


def _task(goal: str) -> dict[str, Any]:
    return task_doc(command=py_command(RECORD), workspaces=[{"name": "code", "goal": goal}])


def test_goal_bootstrap_with_gemini(gemini: Path, start_runner: Any, tmp_path: Path) -> None:
    with ScriptedModelServer(parse_tape(TAPE)) as server:
        runner = start_runner(task=_task(GOAL), env=_env(tmp_path, server.url))
        runner.wait_ready()
        # Ready while the goal runs: readiness never waits for it; the command does.
        assert runner.status()["busy"] is True
        assert not (tmp_path / "command-saw.txt").exists()
        runner.wait_log(r'msg="goal bootstrap completed" workspace=code agent=gemini', 90)
        runner.wait_log("task command completed successfully")
        assert server.connect_attempts == []
        assert server.requests and all(r.status == 200 for r in server.requests)
    workspace = tmp_path / "volume" / "code"
    assert (workspace / "BOOTSTRAPPED.txt").read_text() == "bootstrapped\n"
    assert (tmp_path / "command-saw.txt").read_text() == "True"  # the goal ran first
    key = str(workspace).strip("/").replace("/", "-")
    marker = (runner.state / f"goal-{key}").read_text()
    assert "status: completed" in marker
    result = json.loads((runner.state / "goal" / key / "result.json").read_text())
    assert result["exitCode"] == 0 and result["result"] == "Workspace ready."
    assert FAKE_KEY not in runner.logs()
    assert runner.terminate() == 0
    # The next boot does not run the goal again.
    again = start_runner(task=_task(GOAL), env=_env(tmp_path, "http://127.0.0.1:9"))
    again.wait_log("goal bootstrap already ran; skipping")
    again.wait_log("task command completed successfully")
    assert again.terminate() == 0


def test_failing_goal_still_reaches_readiness(
    gemini: Path, start_runner: Any, tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens: the agent fails
    runner = start_runner(task=_task(GOAL), env=_env(tmp_path, closed))
    runner.wait_ready()
    runner.wait_log(r'msg="goal bootstrap failed \(continuing\)" workspace=code agent=gemini', 60)
    runner.wait_log("task command completed successfully")
    assert (tmp_path / "command-saw.txt").read_text() == "False"
    assert runner.get("/readyz").status == 200
    assert runner.terminate() == 0


def test_timing_out_goal_still_reaches_readiness(
    gemini: Path, start_runner: Any, tmp_path: Path
) -> None:
    with ScriptedModelServer(parse_tape(TAPE)) as server:
        runner = start_runner(
            task=_task("SLOW-GOAL: take forever"),
            env=_env(tmp_path, server.url, AX_BOOTSTRAP_TIMEOUT="3s"),
        )
        runner.wait_ready()
        started = time.monotonic()
        runner.wait_log(r'msg="goal bootstrap timed out \(continuing\)"', 60)
        assert time.monotonic() - started < 15
        runner.wait_log("task command completed successfully")
    assert "status: timed_out" in next(runner.state.glob("goal-*")).read_text()
    assert runner.get("/readyz").status == 200
    assert runner.terminate() == 0


def test_sigterm_during_a_goal(gemini: Path, start_runner: Any, tmp_path: Path) -> None:
    """The goal agent is stopped with the runner; no marker, so the next boot runs it."""
    with ScriptedModelServer(parse_tape(TAPE)) as server:
        runner = start_runner(task=_task("SLOW-GOAL: take forever"), env=_env(tmp_path, server.url))
        runner.wait_ready()
        runner.wait_for(lambda: bool(server.requests), "the agent's first request", 30)
        started = time.monotonic()
        assert runner.terminate() == 0
        assert time.monotonic() - started < 10
    assert "goal bootstrap cancelled; it runs again on the next boot" in runner.logs()
    assert "started task command" not in runner.logs()
    assert not list(runner.state.glob("goal-*"))
