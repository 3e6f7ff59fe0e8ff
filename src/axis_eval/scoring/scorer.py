"""The scoring seam of a job: deterministic checks, then judges, then the AXIS Result.

:class:`JudgeScorer` implements ``execute.job.Scorer``. Per completed run, in order:

1. deterministic checks (rubric items with ``run``) in the workspace —
   :meth:`JudgeScorer.run_checks`, to be called before artifacts are collected (``score``
   runs them itself when that did not happen);
2. the judges: one goal judgment and one interaction audit per chunk, concurrently, through
   the run-wide concurrency limit, the retry policy and the answer cache. A run whose
   checks are all deterministic and that made no tool call calls no judge;
3. :func:`~axis_eval.scoring.composite.score_from_verdicts`.

A failed run is not scored (None). A judge that fails for good gives a withheld result with
its reason, never a zero.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from axis_eval.adapters.base import AgentAdapter
from axis_eval.config.models import Judging, LoadedConfig, weights_of
from axis_eval.config.scenario import Scenario
from axis_eval.errors import PreflightError
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import kill_marked, new_run_token, spawn
from axis_eval.execute.sandbox.base import JobSandbox
from axis_eval.execute.workspace import JobDirs, build_env
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.redact import Redactor
from axis_eval.scoring.cache import JudgeCache, cache_root
from axis_eval.scoring.checks import rubric_of, run_checks
from axis_eval.scoring.chunks import RunMaterial, judge_run
from axis_eval.scoring.composite import WeightsLike, score_from_verdicts, withhold
from axis_eval.scoring.judge import (
    Judge,
    JudgeChoice,
    JudgeFailed,
    SpendMeter,
    choose_judge,
    judged_on_model_server,
    on_model_server,
)
from axis_eval.scoring.judge_agent import AgentJudge, load_judge_adapters
from axis_eval.scoring.judge_api import ApiJudge, api_key_for
from axis_eval.scoring.models import CalibrationConfig, CheckVerdict, JudgeVerdicts, ScoreResult
from axis_eval.scoring.panel import combine, panel_choices
from axis_eval.scoring.retry import AdaptiveLimiter, RetryPolicy
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import SparseIndex, build_sparse_index

log = logging.getLogger(__name__)

__all__ = ["JudgeScorer", "preflight_judging"]


class JudgeScorer:
    """Scores finished runs; one instance (and one judge concurrency limit) per ``axis run``.

    Args:
        judging: the config's ``judging`` (None: each run is judged by its own agent).
        config_dir: the config's folder; the answer cache is ``<it>/.axis/judge-cache``.
        adapters: loaded adapters by name: the run's agents and any judge agents
            (see :func:`preflight_judging`).
        parent_env: where API keys and judge agents' variables come from.
        redactor: the run's redactor: secrets never reach a judge or a check's output.
        weights: composite weights (default 0.4/0.2/0.2/0.2).
        calibration: the category S-curves (default: the scoring tables').
        run_token: the run's process marker prefix.
        model_server_url: the embedded scripted model server: the endpoint of agent judges,
            and of API judges without ``base_url`` (a dry run spends no judge tokens).
        judge_override: ``--judge``: ``provider:model`` or an agent name.
        use_cache: read and write the answer cache.
        policy: retry policy for API calls (default from ``judging.max_attempts``).
    """

    def __init__(
        self,
        *,
        judging: Judging | None,
        config_dir: str | Path,
        adapters: Mapping[str, AgentAdapter[Any]] | None = None,
        parent_env: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
        weights: WeightsLike = None,
        calibration: CalibrationConfig | None = None,
        run_token: str | None = None,
        model_server_url: str | None = None,
        judge_override: str | None = None,
        use_cache: bool = True,
        policy: RetryPolicy | None = None,
        tmp_base: str | None = None,
    ) -> None:
        self.settings = judging or Judging()
        self._judging = judging
        self.adapters = dict(adapters or {})
        self.parent_env = dict(parent_env if parent_env is not None else os.environ)
        self.redactor = redactor or Redactor()
        self.weights = weights
        self.calibration = calibration
        self.run_token = run_token or new_run_token()
        self.model_server_url = model_server_url
        self.judge_override = judge_override
        self.cache = JudgeCache(cache_root(config_dir)) if use_cache else None
        self.policy = policy or RetryPolicy(max_attempts=self.settings.max_attempts)
        self.limiter = AdaptiveLimiter(self.settings.concurrency)
        """The one judge concurrency limit shared by every job of the run."""
        self.tmp_base = tmp_base
        self._judges: dict[tuple[str | None, ...], Judge] = {}
        self._checked: dict[str, dict[int, CheckVerdict]] = {}

    @classmethod
    def for_config(
        cls,
        loaded: LoadedConfig,
        adapters: Mapping[str, AgentAdapter[Any]],
        environ: Mapping[str, str],
        **options: Any,
    ) -> JudgeScorer:
        """A scorer for a loaded config (its judging, weights and folder)."""
        return cls(
            judging=loaded.config.judging,
            config_dir=loaded.config_dir,
            adapters=adapters,
            parent_env=environ,
            weights=weights_of(loaded.config),
            **options,
        )

    # ------------------------------------------------------------------ the seam

    async def run_checks(
        self, outcome: JobOutcome, workspace: Path, sandbox: JobSandbox | None = None
    ) -> list[CheckVerdict]:
        """Run the deterministic checks of a completed run (before artifacts and judges), in
        the job's ``sandbox`` (None: on the host)."""
        spec = outcome.spec
        rubric = rubric_of(spec.scenario)
        if outcome.status != "completed" or outcome.failed or not any(c.run for c in rubric):
            return []
        # A marker of their own: cleaning up after the checks must not stop what the
        # setup started for the judges and the teardown (those carry the job's marker).
        marker = f"{self.run_token}/{spec.number}/checks"
        env = _check_env(spec, workspace, self.parent_env)
        try:
            verdicts = await run_checks(
                rubric,
                cwd=str(workspace),
                env=env,
                marker=marker,
                timeout_s=self.settings.timeout_seconds,
                redactor=self.redactor,
                spawner=sandbox.spawn if sandbox is not None else spawn,
            )
        finally:
            if sandbox is None:
                await kill_marked(marker, 0.5)
            else:
                await sandbox.release(marker)
        self._checked[spec.id] = verdicts
        return [verdicts[p] for p in sorted(verdicts)]

    def take_checks(self, spec: JobSpec) -> dict[int, CheckVerdict] | None:
        """The deterministic verdicts :meth:`run_checks` kept for ``spec`` (by rubric
        position), handed over and forgotten: a remote worker sends them back with the job,
        for the judges where ``axis run`` is."""
        return self._checked.pop(spec.id, None)

    async def score(self, outcome: JobOutcome, workspace: Path | None) -> ScoreResult | None:
        """The run's AXIS Result; None for a run that did not complete.

        Also sets ``outcome.verdicts`` (stored as ``verdicts.json`` for ``axis score``).
        """
        if outcome.status != "completed" or outcome.failed:
            return None
        spec = outcome.spec
        if spec.id not in self._checked and outcome.checks is not None:
            # They ran where the job ran (a remote worker), before its workspace went.
            self._checked[spec.id] = dict(outcome.checks)
        if spec.id not in self._checked and workspace is not None:
            await self.run_checks(outcome, workspace)
        deterministic = self._checked.pop(spec.id, {})
        transcript = outcome.transcript or Transcript(agent=spec.agent.adapter)
        index = build_sparse_index(
            transcript, scenario_key=spec.scenario.key, agent_name=spec.agent.name
        )
        try:
            verdicts = await self.verdicts_for(
                transcript, index, spec.scenario, spec.agent, deterministic, workspace=workspace
            )
        except Exception as exc:  # a bug must not lose the run: withhold and log it
            log.exception("scoring %s failed", spec.id)
            return withhold(f"scoring failed: {type(exc).__name__}: {exc}", weights=self.weights)
        outcome.verdicts = verdicts
        return score_from_verdicts(transcript, index, verdicts, self.weights, self.calibration)

    # ------------------------------------------------------------------ judging

    async def verdicts_for(
        self,
        transcript: Transcript,
        index: SparseIndex,
        scenario: Scenario,
        agent: AgentSpec,
        deterministic: Mapping[int, CheckVerdict],
        *,
        workspace: Path | None,
        choice: JudgeChoice | None = None,
    ) -> JudgeVerdicts:
        """Everything the judges say about one run (withheld on :class:`JudgeFailed`)."""
        rubric = rubric_of(scenario)
        judged = [c for c in rubric if c.run is None]
        if not judged and not index.interactions:
            checks = [deterministic[c.position] for c in rubric if c.position in deterministic]
            return JudgeVerdicts(checks=checks, chunks=0)
        panel = self.panel_for(agent, choice)
        if panel:
            members = await asyncio.gather(
                *(
                    self._one_judge(transcript, index, scenario, deterministic, workspace, m)
                    for m in panel
                )
            )
            return combine(panel, members, self.settings.panel_margin)
        choice = choice or choose_judge(self._judging, agent, self.judge_override)
        return await self._one_judge(transcript, index, scenario, deterministic, workspace, choice)

    async def _one_judge(
        self,
        transcript: Transcript,
        index: SparseIndex,
        scenario: Scenario,
        deterministic: Mapping[int, CheckVerdict],
        workspace: Path | None,
        choice: JudgeChoice,
    ) -> JudgeVerdicts:
        rubric = rubric_of(scenario)
        choice = on_model_server(choice, self.model_server_url)
        simulated = judged_on_model_server(choice, self.model_server_url)
        meter = SpendMeter(choice=choice, simulated=simulated)
        material = RunMaterial(
            transcript=transcript,
            index=index,
            scenario=scenario,
            rubric=rubric,
            deterministic=dict(deterministic),
            workspace=workspace,
        )
        try:
            judge = self._judge_for(choice)
            return await judge_run(
                judge,
                material,
                meter=meter,
                cache=self.cache if choice.kind == "api" else None,
                redactor=self.redactor,
                context_tokens=self.settings.context_tokens,
            )
        except JudgeFailed as exc:
            checks = [deterministic[c.position] for c in rubric if c.position in deterministic]
            return JudgeVerdicts(
                checks=checks, spend=meter.spend(), withheld_reason=exc.message, chunks=0
            )

    def panel_for(self, agent: AgentSpec, choice: JudgeChoice | None) -> list[JudgeChoice]:
        """The panel's members (``judging.panel``) for a default judgment: no ``--judge``,
        and ``choice`` unset or the default judge (a re-score's)."""
        if not self.settings.panel or self.judge_override is not None:
            return []
        if choice is not None and choice.key != choose_judge(self._judging, agent).key:
            return []
        return panel_choices(self._judging, agent)

    def _judge_for(self, choice: JudgeChoice) -> Judge:
        judge = self._judges.get(choice.key)
        if judge is not None:
            return judge
        if choice.kind == "api":
            judge = ApiJudge(
                choice,
                api_key=api_key_for(choice, self.parent_env),
                timeout_s=self.settings.timeout_seconds,
                limiter=self.limiter,
                policy=self.policy,
            )
        else:
            assert choice.agent is not None
            adapter = self.adapters.get(choice.agent.adapter)
            if adapter is None:
                raise JudgeFailed(
                    f"the judge agent's adapter {choice.agent.adapter!r} is not loaded"
                )
            judge = AgentJudge(
                choice,
                adapter,
                parent_env=self.parent_env,
                limiter=self.limiter,
                timeout_s=self.settings.timeout_seconds,
                run_token=self.run_token,
                endpoint=self.model_server_url,
                tmp_base=self.tmp_base,
            )
        self._judges[choice.key] = judge
        return judge


def _check_env(spec: JobSpec, workspace: Path, parent: Mapping[str, str]) -> dict[str, str]:
    dirs = JobDirs.under(workspace.parent, workspace)
    env = build_env(spec, dirs, parent)
    env["AXIS_WORKSPACE"] = str(workspace)
    return env


def preflight_judging(
    loaded: LoadedConfig,
    agents: list[AgentSpec],
    adapters: Mapping[str, AgentAdapter[Any]],
    environ: Mapping[str, str],
    judge_override: str | None = None,
    model_server_url: str | None = None,
) -> dict[str, AgentAdapter[Any]]:
    """Check, before any job starts, that every run's judge can work; load judge agents.

    Returns ``adapters`` plus the judge agents' adapters (give them to the scorer).

    Raises:
        PreflightError: an API judge without key or ``base_url``, a judge agent that cannot
            load or lacks a variable it needs.
        ConfigError: a malformed ``provider:model``.
    """
    judging = loaded.config.judging
    found = [
        on_model_server(c, model_server_url)
        for a in agents
        for c in (panel_choices(judging, a) if judge_override is None else [])
        or [choose_judge(judging, a, judge_override)]
    ]
    choices = list({c.key: c for c in found}.values())
    names = [c.agent.adapter for c in choices if c.kind == "agent" and c.agent is not None]
    loaded_adapters = load_judge_adapters(loaded, adapters, names)
    for choice in choices:
        if choice.kind == "api":
            try:
                api_key_for(choice, environ)
            except JudgeFailed as exc:
                raise PreflightError(
                    exc.message, hint=f"export {choice.api_key_env}=… or set judging.base_url"
                ) from exc
            continue
        assert choice.agent is not None
        adapter = loaded_adapters[choice.agent.adapter]
        missing = [n for n in adapter.required_env if not environ.get(n)]
        if missing:
            raise PreflightError(
                f"the judge agent {choice.label!r} needs {', '.join(missing)}, which is not set",
                hint=f"export {missing[0]}=… or configure another judge in `judging`",
            )
    return loaded_adapters
