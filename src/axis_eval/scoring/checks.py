"""Rubric checks of a scenario, and the deterministic ones run in the workspace.

A check with ``run`` is a shell command run after the agent finishes, in its workspace and
environment, before artifacts are collected and before any judge: exit 0 scores 10,
anything else (a non-zero exit, a time limit, a failure to start) scores 0. The output is
kept, redacted and cut to its last few kilobytes, in the :class:`CheckVerdict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from axis_eval.config.scenario import ResolvedCheck, Scenario
from axis_eval.execute.process import Spawner, SpawnFailed, run_shell, spawn
from axis_eval.redact import Redactor
from axis_eval.scoring.models import CheckVerdict

OUTPUT_CHARS = 4000
"""A deterministic check keeps the last this many characters of its output."""


@dataclass(frozen=True)
class RubricCheck:
    """One check in rubric order, with its position."""

    position: int
    text: str
    weight: float
    run: str | None = None


def rubric_of(scenario: Scenario) -> list[RubricCheck]:
    """The scenario's checks in order: a string judge is one check of weight 1."""
    judge = scenario.judge
    if isinstance(judge, str):
        return [RubricCheck(0, judge, 1.0)]
    return [_from(n, c) for n, c in enumerate(judge)]


def _from(position: int, check: ResolvedCheck) -> RubricCheck:
    return RubricCheck(position, check.check, check.weight, check.run)


def _tail(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"[… {len(text) - limit} characters before this …]\n" + text[-limit:]


async def run_check(
    check: RubricCheck,
    *,
    cwd: str,
    env: Mapping[str, str],
    marker: str,
    timeout_s: float,
    redactor: Redactor,
    grace_s: float = 2.0,
    spawner: Spawner = spawn,
) -> CheckVerdict:
    """Run one deterministic check and return its verdict (never raises for the command)."""
    assert check.run is not None
    try:
        result = await run_shell(
            check.run,
            cwd=cwd,
            env=dict(env),
            marker=marker,
            timeout_s=timeout_s,
            grace_s=grace_s,
            spawner=spawner,
        )
    except (SpawnFailed, OSError) as exc:
        return CheckVerdict(
            check=check.text,
            weight=check.weight,
            score=0,
            rationale=f"the command could not start: {exc}",
            kind="deterministic",
            command=check.run,
        )
    output = "\n".join(x for x in (result.stdout.rstrip(), result.stderr.rstrip()) if x)
    if result.timed_out:
        rationale = f"timed out after {timeout_s:g}s"
    elif result.exit_code == 0:
        rationale = "exit code 0"
    else:
        rationale = f"exit code {result.exit_code}"
    return CheckVerdict(
        check=check.text,
        weight=check.weight,
        score=10 if result.exit_code == 0 and not result.timed_out else 0,
        rationale=rationale,
        kind="deterministic",
        command=check.run,
        exit_code=result.exit_code,
        output=redactor.text(_tail(output)) or None,
    )


async def run_checks(
    checks: list[RubricCheck],
    *,
    cwd: str,
    env: Mapping[str, str],
    marker: str,
    timeout_s: float,
    redactor: Redactor,
    spawner: Spawner = spawn,
) -> dict[int, CheckVerdict]:
    """Every deterministic check, one after another (they may share files), by position."""
    out: dict[int, CheckVerdict] = {}
    for check in checks:
        if check.run is not None:
            out[check.position] = await run_check(
                check,
                cwd=cwd,
                env=env,
                marker=marker,
                timeout_s=timeout_s,
                redactor=redactor,
                spawner=spawner,
            )
    return out
