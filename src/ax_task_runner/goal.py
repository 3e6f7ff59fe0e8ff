"""Goal bootstrap: a binding's ``goal`` handed to an agent CLI through an axis_eval adapter.

Upstream runs a Gemini-backed script; here any axis_eval agent can do it (default
``gemini``, since ``GEMINI_API_KEY`` is the credential AX supplies): a built-in name, a
``module:attribute`` or a ``file.py[:attribute]`` custom adapter. The agent is spawned
by :mod:`axis_eval.execute.process` in its own process group and stopped on timeout or
shutdown. axis_eval is imported on first use only, in a thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ax_task_runner.files import write_atomic
from ax_task_runner.logs import redactor

__all__ = ["GoalOutcome", "GoalStatus", "goal_prompt", "run_goal"]

GoalStatus = Literal["completed", "failed", "timed_out", "skipped", "cancelled"]
_GRACE_S = 2.0


@dataclass(frozen=True)
class GoalOutcome:
    """How one goal bootstrap ended."""

    status: GoalStatus
    message: str
    duration_s: float = 0.0


def goal_prompt(goal: str, workspace: str) -> str:
    """The one prompt the agent gets (upstream's script sends a similar single prompt)."""
    return (
        f"Set up the workspace at {workspace} according to this goal:\n\n{goal}\n\n"
        "Work inside that folder: install what the goal needs and run the commands it asks "
        "for. Do not ask questions; when you are done, reply with a short summary."
    )


def _load_adapter(name: str) -> Any:
    """The adapter for ``name`` (blocking: imports and a binary look-up)."""
    from axis_eval.adapters.builtins import BUILTINS
    from axis_eval.adapters.loader import load_adapter
    from axis_eval.adapters.registry import python_ref

    if name in BUILTINS:
        return load_adapter(BUILTINS[name])
    found = python_ref(name, name, ".")  # a file relative to the working directory
    if found is not None:
        return load_adapter(found)
    known = ", ".join(sorted(BUILTINS))
    raise ValueError(f"unknown agent {name!r} (built-ins: {known}; or module:attr, file.py)")


def _prepare_imports() -> None:
    import axis_eval.execute.supervise
    import axis_eval.planning.models  # noqa: F401


def _save(folder: Path, output: Any) -> None:
    """Keep the agent's output for diagnostics, redacted."""
    raw = "\n".join(output.raw_output)
    write_atomic(folder / "output.ndjson", redactor(raw) + ("\n" if raw else ""), mode=0o600)
    write_atomic(folder / "stderr.txt", redactor(output.stderr), mode=0o600)
    summary = {
        "exitCode": output.exit_code,
        "result": output.result,
        "error": output.error,
        "errorKind": output.error_kind,
        "startedAt": output.started_at,
        "endedAt": output.ended_at,
    }
    write_atomic(folder / "result.json", redactor(json.dumps(summary, indent=2)) + "\n")


async def run_goal(
    *,
    goal: str,
    workspace: str,
    agent: str,
    env: dict[str, str],
    folder: Path,
    timeout_s: float,
    cancel: asyncio.Event,
    model: str | None = None,
    endpoint: str | None = None,
) -> GoalOutcome:
    """Run the goal agent once in ``workspace``; never raises for the agent's faults.

    ``folder`` holds the agent's HOME and its saved output. Setting ``cancel`` stops the
    agent (its whole process group); the outcome is then ``cancelled``.
    """
    started = time.monotonic()

    def outcome(status: GoalStatus, message: str) -> GoalOutcome:
        return GoalOutcome(status, redactor(message), time.monotonic() - started)

    try:
        adapter = await asyncio.to_thread(_load_adapter, agent)
        await asyncio.to_thread(_prepare_imports)
    except Exception as exc:
        return outcome("skipped", f"goal agent {agent!r} is not available: {exc}")
    required = tuple(adapter.required_env)
    if required and not any(env.get(name) for name in required):
        return outcome("skipped", f"{' or '.join(required)} is not set")

    from axis_eval.adapters.base import AdapterInput
    from axis_eval.execute.supervise import RunControl, run_agent
    from axis_eval.planning.models import AgentSpec

    home = folder / "home"
    home.mkdir(parents=True, exist_ok=True)
    isolation = adapter.isolation_env(workspace, str(home)) if adapter.isolation_env else {}
    inp = AdapterInput(
        prompt=goal_prompt(goal, workspace),
        agent=AgentSpec(name=agent, adapter=agent, model=model, endpoint=endpoint),
        workspace=workspace,
        home=str(home),
        env={**env, **isolation},
        time_limit_s=timeout_s,
        endpoint=endpoint,
    )
    control = RunControl(
        marker=f"ax-goal/{os.getpid()}-{secrets.token_hex(4)}",
        grace_s=_GRACE_S,
        cancel=cancel,
        cancel_reason="the runner is stopping",
    )
    output = await run_agent(adapter, inp, control)
    try:
        await asyncio.to_thread(_save, folder, output)
    except OSError:
        pass
    if output.error_kind == "timeout":
        return outcome("timed_out", f"no result within {timeout_s:g}s")
    if output.error_kind == "cancelled":
        return outcome("cancelled", output.error or "cancelled")
    if output.failed or output.error:
        return outcome("failed", output.error or f"exit status {output.exit_code}")
    return outcome("completed", (output.result or "").strip()[:300])
