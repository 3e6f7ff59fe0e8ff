"""Inputs and controls for running the scripted test agents (tests/agents) through the
supervisor; shared by tests/adapters and tests/execute."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from axis_eval.adapters.base import AdapterInput
from axis_eval.execute.process import new_run_token
from axis_eval.execute.supervise import RunControl
from axis_eval.planning.models import AgentSpec

PY = sys.executable
AGENTS = Path(__file__).resolve().parents[1] / "agents"  # tests/agents: the scripted agents
RUN_TOKEN = new_run_token()
_jobs = itertools.count(1)

MakeInput = Callable[..., AdapterInput]


def agent_argv(script: str, *args: str) -> list[str]:
    """argv running one of the scripted agents in tests/agents."""
    return [PY, str(AGENTS / script), *args]


def new_control(**kwargs: Any) -> RunControl:
    """A control with a fresh job marker and a short grace period."""
    return RunControl(marker=f"{RUN_TOKEN}/test-{next(_jobs)}", grace_s=0.5, **kwargs)


def input_maker(tmp_path: Path) -> MakeInput:
    """``make(prompt, command=…, model=…, flags=…, time_limit_s=…)``: a job input with a
    workspace and HOME under ``tmp_path``."""

    def make(
        prompt: str = "hello world",
        *,
        command: list[str] | None = None,
        model: str | None = None,
        flags: dict[str, str | bool] | None = None,
        time_limit_s: float = 60.0,
    ) -> AdapterInput:
        workspace = tmp_path / "work"
        home = tmp_path / "home"
        workspace.mkdir(exist_ok=True)
        home.mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "PYTHONIOENCODING": "utf-8",
            "AXIS_CONFIG_DIR": str(tmp_path / "config"),
        }
        agent = AgentSpec(
            name="test-agent", adapter="test", model=model, flags=flags or {}, command=command
        )
        return AdapterInput(
            prompt=prompt,
            agent=agent,
            workspace=str(workspace),
            home=str(home),
            env=env,
            mcp_servers={},
            skills=[],
            time_limit_s=time_limit_s,
        )

    return make
