"""The agent judge: an agent CLI run with the judge prompt as its task, as AXIS judges.

Unlike AXIS, the judge does not inherit the whole parent environment: it gets a fresh job
folder of its own (workspace, HOME, TMPDIR), the system essentials and the variables its
adapter declares (its API key), nothing else. The agent's workspace (still there: judges
run before teardown) is named in the goal prompt so the judge can verify files, and
judges run last because they might change them. A run that fails, or ends without an
answer, raises :class:`JudgeFailed`; answers are not cached (they depend on the files).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from axis_eval.adapters.base import AdapterInput, AgentAdapter
from axis_eval.adapters.hooks import run_hook
from axis_eval.adapters.loader import AdapterLoadError, load_adapter
from axis_eval.adapters.registry import resolve, resolve_custom
from axis_eval.config.models import LoadedConfig
from axis_eval.errors import PreflightError
from axis_eval.execute.process import kill_marked
from axis_eval.execute.supervise import AgentRun, RunControl, run_agent
from axis_eval.execute.workspace import AGENT_CONFIG_DIRS, PASSTHROUGH, create_job_dirs
from axis_eval.scoring.judge import JudgeChoice, JudgeFailed, JudgeReply, JudgeRequest
from axis_eval.scoring.retry import AdaptiveLimiter

PROMPT_FILE_BYTES = 100_000
"""Prompts larger than this are written to ``judge-input.md`` in the judge's workspace."""
_counter = itertools.count(1)


def judge_env(
    adapter: AgentAdapter[Any],
    home: Path,
    tmp: Path,
    workspace: Path,
    parent: Mapping[str, str],
    isolation: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The judge agent's environment: essentials, its adapter's variables, its own HOME.

    ``isolation``: what the adapter's ``isolation_env`` gave (else it is called here)."""
    env: dict[str, str] = {}
    if isolation is not None:
        env.update(isolation)
    elif adapter.isolation_env:
        env.update(adapter.isolation_env(str(workspace), str(home)))
    for name, sub in AGENT_CONFIG_DIRS.items():
        env[name] = str(home / sub)
    for name in (*PASSTHROUGH, *adapter.required_env, *adapter.optional_env):
        if parent.get(name):
            env[name] = parent[name]
    env.update({"HOME": str(home), "TMPDIR": str(tmp)})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    return env


def render_prompt(request: JudgeRequest) -> str:
    """One task text from a request: the instructions, then the conversation."""
    parts = [request.system]
    for message in request.messages:
        if message.role == "assistant":
            parts.append(f"YOUR PREVIOUS ANSWER:\n{message.text}")
        else:
            parts.append(message.text)
    return "\n\n".join(parts)


class AgentJudge:
    """A judge that runs an agent adapter once per request.

    Args:
        choice: an agent :class:`JudgeChoice`.
        adapter: the loaded adapter of ``choice.agent``.
        parent_env: the environment to take the essentials and the adapter's keys from.
        limiter: the run's shared judge concurrency limit.
        timeout_s: one judge run's time limit.
        run_token: the run's process marker prefix (the sentinel cleans up after it).
        endpoint: the model API base URL (the scripted model server), when one is used.
    """

    def __init__(
        self,
        choice: JudgeChoice,
        adapter: AgentAdapter[Any],
        *,
        parent_env: Mapping[str, str],
        limiter: AdaptiveLimiter,
        timeout_s: float,
        run_token: str,
        endpoint: str | None = None,
        tmp_base: str | None = None,
        grace_s: float = 5.0,
    ) -> None:
        if choice.agent is None:
            raise ValueError("AgentJudge needs an agent judge choice")
        self._choice = choice
        self._adapter = adapter
        self._parent_env = dict(parent_env)
        self._limiter = limiter
        self._timeout_s = timeout_s
        self._run_token = run_token
        self._endpoint = endpoint
        self._tmp_base = tmp_base
        self._grace_s = grace_s

    @property
    def choice(self) -> JudgeChoice:
        """Who this judge is."""
        return self._choice

    async def ask(self, request: JudgeRequest) -> JudgeReply:
        """Run the judge agent once on ``request``."""
        async with self._limiter.slot():
            output = await self._run(request)
        name = self._choice.label
        if output.failed or not output.result or output.transcript is None:
            reason = output.error or "it ended without an answer"
            raise JudgeFailed(f"judge agent {name} ({request.purpose}): {reason}")
        transcript = output.transcript
        return JudgeReply(
            text=output.result,
            usage=transcript.usage,
            cost_usd=transcript.cost_usd,
            cost_estimated=transcript.cost_estimated,
        )

    async def _run(self, request: JudgeRequest) -> AgentRun:
        spec = self._choice.agent
        assert spec is not None
        dirs = create_job_dirs(self._tmp_base)
        marker = f"{self._run_token}/judge-{next(_counter)}"
        try:
            prompt = render_prompt(request)
            if len(prompt.encode()) > PROMPT_FILE_BYTES:
                (dirs.workspace / "judge-input.md").write_text(prompt, encoding="utf-8")
                prompt = (
                    "Read the file judge-input.md in your working directory: it holds your "
                    "whole task. Follow it and answer exactly as it asks."
                )
            isolate = self._adapter.isolation_env  # (a JavaScript adapter's: off the loop)
            isolation = (
                await run_hook(isolate, str(dirs.workspace), str(dirs.home)) if isolate else {}
            )
            env = judge_env(
                self._adapter, dirs.home, dirs.tmp, dirs.workspace, self._parent_env, isolation
            )
            inp = AdapterInput(
                prompt=prompt,
                agent=spec,
                workspace=str(dirs.workspace),
                home=str(dirs.home),
                env=env,
                time_limit_s=self._timeout_s,
                endpoint=spec.endpoint or self._endpoint,
            )
            control = RunControl(marker=marker, grace_s=self._grace_s)
            return await run_agent(self._adapter, inp, control)
        finally:
            await kill_marked(marker, 0.5)
            dirs.remove()


def load_judge_adapters(
    loaded: LoadedConfig, adapters: Mapping[str, AgentAdapter[Any]], names: list[str]
) -> dict[str, AgentAdapter[Any]]:
    """``adapters`` plus the loaded adapters of ``names`` (judge agents) not yet in it.

    Raises:
        PreflightError: a judge adapter cannot load or lacks a required variable.
    """
    out = dict(adapters)
    custom = resolve_custom(loaded.config, loaded.config_dir, loaded.path)
    for name in names:
        if name in out:
            continue
        try:
            out[name] = load_adapter(resolve(name, loaded.config, custom, where="judging"))
        except AdapterLoadError as exc:
            raise PreflightError(f"judge agent {name!r}: {exc.message}", hint=exc.hint) from exc
    return out
