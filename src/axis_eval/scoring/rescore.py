"""``axis score REPORT_ID``: score a finished report again from what is on disk.

The workspace of every run is gone, so:

- deterministic check results are reused from the stored score;
- verdicts of an agent judge are reused (it verified files that no longer exist);
- an API judge is asked again through the answer cache: an unchanged prompt is a cache hit,
  so re-scoring with changed weights or calibration makes no call and spends no token;
  ``--judge provider:model`` asks another model (new calls, new spend);
- ``--judge <agent>`` runs that agent on the transcript alone, without the files;
- a run that was never scored (``--no-score``; ``axis run --resume`` scores such runs
  through :func:`score_finished_run`) asks its judge: an API judge, or an agent judge whose
  adapter is loaded (``--judge <agent>``, or the resumed run's judges) on the transcript
  alone. Its deterministic checks cannot run any more: with ``run`` checks it is withheld.

With ``rejudge=K`` (``--rejudge K``) each scored run's transcript is then judged K more
times by the same judge, the answer cache bypassed (:mod:`axis_eval.scoring.rejudge`):
``RescoredRun.rejudged`` holds those K scores; ``runs.judge_noise`` turns them into the
judge's spread.

Nothing here writes: :func:`rescore_report` returns the new scores and the caller stores
them (``result.json``'s ``run.score``, the manifest, ``verdicts.json``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axis_eval.adapters.base import AgentAdapter
from axis_eval.config.models import LoadedConfig, weights_of
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.redact import Redactor
from axis_eval.report.models import (
    RESULT_FILE,
    VERDICTS_FILE,
    ReportManifest,
    RunEntry,
    RunResult,
)
from axis_eval.scoring.checks import rubric_of
from axis_eval.scoring.composite import WeightsLike, score_from_verdicts, withhold
from axis_eval.scoring.judge import JudgeChoice, choose_judge
from axis_eval.scoring.judge_agent import load_judge_adapters
from axis_eval.scoring.models import (
    CalibrationConfig,
    CheckVerdict,
    JudgeSpend,
    JudgeVerdicts,
    NecessityVerdict,
    ScoreResult,
)
from axis_eval.scoring.rejudge import (
    RejudgeEstimate as RejudgeEstimate,
    estimate_rejudge as estimate_rejudge,
    judge_model_server as judge_model_server,
)
from axis_eval.scoring.retry import RetryPolicy
from axis_eval.scoring.scorer import JudgeScorer
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import SparseIndex, build_sparse_index

log = logging.getLogger(__name__)

REUSED_CHECKS = "deterministic check results reused from the first scoring (the workspace is gone)"
REUSED_AGENT = "agent-judge verdicts reused from the first scoring (the workspace is gone)"
_ANY_AGENT = AgentSpec(name="-", adapter="-")
"""A run agent for resolving ``--judge`` alone (an override does not depend on it)."""


@dataclass
class RescoredRun:
    """One run's new score."""

    scenario_key: str
    agent_name: str
    run_index: int
    dir: str
    """The run's folder, relative to the report folder."""
    score: ScoreResult | None
    """None: the run is not scored (failed, cancelled, or nothing on disk to score)."""
    previous: ScoreResult | None = None
    verdicts: JudgeVerdicts | None = None
    """What the new score was computed from (store it as ``verdicts.json``)."""
    asked: bool = False
    """True when a judge was asked (through the cache); False when verdicts were reused."""
    reason: str | None = None
    """Why a run got no score."""
    sparse_index: SparseIndex | None = None
    """The index the judges saw (saved as ``sparse-index.txt`` when the run has none)."""
    rejudged: list[ScoreResult] = field(default_factory=list)
    """``--rejudge K``: the K new scores of the same transcript (the cache bypassed)."""
    rejudge_spend: list[JudgeSpend] = field(default_factory=list)
    """What each of those judgments cost (who judged, tokens, simulated or not)."""
    rejudge_note: str | None = None
    """Why a scored run was not re-judged."""


@dataclass
class RescoreResult:
    """Every run of the report, rescored, with what it cost."""

    runs: list[RescoredRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Lines to show the user (what was reused, what was asked again)."""
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    rejudge: int = 0
    """K of ``--rejudge K`` (0: no re-judging)."""

    @property
    def rejudge_spend(self) -> list[JudgeSpend]:
        """Every re-judgment's spend, over the runs."""
        return [s for r in self.runs for s in r.rejudge_spend]


def verdicts_from_score(score: ScoreResult) -> JudgeVerdicts:
    """The verdicts a stored score was computed from (lossless for scoring)."""
    necessity = {
        name: NecessityVerdict(
            score=cat.signals.necessity,
            unnecessary_ids=cat.unnecessary_ids,
            rationale=cat.necessity_rationale or "",
        )
        for name, cat in score.categories.items()
        if cat.interactions > 0
    }
    return JudgeVerdicts(
        checks=score.checks,
        audits=score.audits,
        necessity=necessity,
        chunks=score.chunks,
        spend=score.judge,
        notes=[n for n in score.notes if not n.startswith("no goal checks")],
        withheld_reason=score.withheld_reason if score.withheld else None,
    )


def _stored_verdicts(path: Path, score: ScoreResult | None) -> JudgeVerdicts | None:
    if path.is_file():
        try:
            return JudgeVerdicts.model_validate_json(path.read_bytes())
        except (ValidationError, ValueError):
            pass
    return verdicts_from_score(score) if score is not None else None


def _deterministic(spec: JobSpec, stored: JudgeVerdicts | None) -> dict[int, CheckVerdict]:
    """Stored results of the ``run`` checks by rubric position (matched by text and command)."""
    pool = [c for c in (stored.checks if stored else []) if c.kind == "deterministic"]
    out: dict[int, CheckVerdict] = {}
    for check in rubric_of(spec.scenario):
        if check.run is None:
            continue
        hit = next((c for c in pool if c.check == check.text and c.command == check.run), None)
        if hit is not None:
            pool.remove(hit)
            out[check.position] = hit.model_copy(update={"weight": check.weight})
    return out


class _Rescorer:
    def __init__(
        self,
        scorer: JudgeScorer,
        judge: str | None,
        judging: Any,
        fresh: JudgeScorer | None = None,
        rejudge: int = 0,
    ) -> None:
        self.scorer = scorer
        self.judge = judge
        self.judging = judging
        self.fresh = fresh
        """The re-judging scorer: the same judges, no answer cache."""
        self.rejudge = rejudge

    async def run(self, folder: Path, entry: RunEntry) -> RescoredRun:
        result = RunResult.model_validate_json((folder / entry.dir / RESULT_FILE).read_bytes())
        spec = JobSpec.model_validate(result.spec)
        base = RescoredRun(spec.scenario.key, spec.agent.name, entry.run_index, entry.dir, None)
        previous = ScoreResult.model_validate(entry.score) if entry.score else None
        base.previous = previous
        if entry.status != "completed" or entry.failed:
            base.reason = f"not scored: the run {entry.status if not entry.failed else 'failed'}"
            return base
        path = result.files.get("transcript")
        transcript = (
            Transcript.model_validate_json((folder / path).read_bytes())
            if path
            else Transcript(agent=spec.agent.adapter)
        )
        index = build_sparse_index(
            transcript, scenario_key=spec.scenario.key, agent_name=spec.agent.name
        )
        base.sparse_index = index
        where = result.files.get("verdicts") or f"{entry.dir}/{VERDICTS_FILE}"
        stored = _stored_verdicts(folder / where, previous)
        deterministic = _deterministic(spec, stored)
        choice = choose_judge(self.judging, spec.agent, self.judge)
        agent = choice.agent.adapter if choice.agent else None
        if stored is None and choice.kind == "agent" and agent not in self.scorer.adapters:
            base.reason = f"not scored: never judged, and judge agent {choice.label} is not loaded"
            return base
        lost = [c for c in rubric_of(spec.scenario) if c.run and c.position not in deterministic]
        if lost:
            base.score = withhold(
                f"the check {lost[0].text!r} (`{lost[0].run}`) was never run and its "
                "workspace is gone; re-run the pair (`axis run --failed`)",
                weights=self.scorer.weights,
                calibration=self.scorer.calibration,
            )
            base.reason = "withheld: a deterministic check has no result"
            return base
        verdicts = await self._verdicts(choice, transcript, index, spec, deterministic, stored)
        base.verdicts = verdicts
        base.asked = REUSED_AGENT not in verdicts.notes
        base.score = score_from_verdicts(
            transcript, index, verdicts, self.scorer.weights, self.scorer.calibration
        )
        if self.rejudge and self.fresh is not None:
            await self._rejudge(base, choice, transcript, index, spec, deterministic)
        return base

    async def _rejudge(
        self,
        base: RescoredRun,
        choice: JudgeChoice,
        transcript: Transcript,
        index: SparseIndex,
        spec: JobSpec,
        deterministic: dict[int, CheckVerdict],
    ) -> None:
        """Judge the run's transcript ``self.rejudge`` more times, one after another."""
        assert self.fresh is not None
        score = base.score
        if score is None or score.withheld or score.axis_score is None:
            base.rejudge_note = f"run #{base.run_index}: not re-judged (no score to compare)"
            return
        if (
            choice.kind == "agent"
            and choice.agent
            and choice.agent.adapter not in self.fresh.adapters
            and not self.fresh.panel_for(spec.agent, choice)
        ):
            base.rejudge_note = (
                f"run #{base.run_index}: not re-judged (judge agent {choice.label} is not "
                "loaded; pass --judge <agent> or use an API judge)"
            )
            return
        for _ in range(self.rejudge):
            verdicts = await self.fresh.verdicts_for(
                transcript,
                index,
                spec.scenario,
                spec.agent,
                deterministic,
                workspace=None,
                choice=choice,
            )
            base.rejudged.append(
                score_from_verdicts(
                    transcript, index, verdicts, self.scorer.weights, self.scorer.calibration
                )
            )
            if verdicts.spend is not None:
                base.rejudge_spend.append(verdicts.spend)

    async def _verdicts(
        self,
        choice: JudgeChoice,
        transcript: Transcript,
        index: Any,
        spec: JobSpec,
        deterministic: dict[int, CheckVerdict],
        stored: JudgeVerdicts | None,
    ) -> JudgeVerdicts:
        has_runs = any(c.run for c in rubric_of(spec.scenario))
        # Never judged (no stored verdicts): ask the judge, whatever it is; an agent judge
        # then sees the transcript alone, as with `--judge <agent>`.
        panel = stored is not None and stored.panel is not None  # its API members: cached
        ask_again = choice.kind == "api" or self.judge is not None or stored is None or panel
        if not ask_again:
            assert stored is not None
            notes = [*stored.notes, REUSED_AGENT] + ([REUSED_CHECKS] if has_runs else [])
            return stored.model_copy(update={"notes": list(dict.fromkeys(notes))})
        verdicts = await self.scorer.verdicts_for(
            transcript,
            index,
            spec.scenario,
            spec.agent,
            deterministic,
            workspace=None,
            choice=choice,
        )
        if has_runs:
            verdicts.notes.append(REUSED_CHECKS)
        if choice.kind == "agent" and verdicts.panel is None:
            verdicts.notes.append(
                f"judge agent {choice.label} judged the transcript alone (the workspace is gone)"
            )
        return verdicts


async def score_finished_run(
    scorer: JudgeScorer,
    report_dir: Path,
    pair_key: tuple[str, str],
    entry: RunEntry,
    *,
    judging: Any,
) -> RescoredRun:
    """Score one finished run from its files, through a running ``axis run``'s scorer.

    ``axis run --resume`` scores runs an interruption left unscored this way: the same
    judges, answer cache and judge concurrency limit as the jobs it runs (``judging`` is the
    config's). Nothing is written. A failure to score is a withheld score, never an error,
    as in a fresh run.
    """
    try:
        return await _Rescorer(scorer, scorer.judge_override, judging).run(report_dir, entry)
    except Exception as exc:  # a bug or an unreadable file must not stop the run
        log.exception("scoring %s failed", entry.dir)
        reason = f"scoring failed: {type(exc).__name__}: {exc}"
        return RescoredRun(
            *pair_key,
            entry.run_index,
            entry.dir,
            withhold(reason, weights=scorer.weights, calibration=scorer.calibration),
            reason=reason,
        )


async def rescore_report(
    report_dir: Path,
    loaded: LoadedConfig,
    *,
    judge: str | None = None,
    environ: Mapping[str, str] | None = None,
    adapters: Mapping[str, AgentAdapter[Any]] | None = None,
    redactor: Redactor | None = None,
    weights: WeightsLike = None,
    calibration: CalibrationConfig | None = None,
    use_cache: bool = True,
    policy: RetryPolicy | None = None,
    rejudge: int = 0,
    model_server_url: str | None = None,
) -> RescoreResult:
    """Score every run of the report in ``report_dir`` again (nothing is written).

    ``weights`` default to the config's ``settings.scoring_weights``; ``judge`` is
    ``--judge``. Transcripts on disk are already redacted; ``redactor`` adds more secrets.
    ``rejudge``: judge each scored run K more times, the cache bypassed. ``model_server_url``:
    the embedded scripted model server (API judges without ``base_url`` ask it).

    Raises:
        PreflightError: ``--judge`` names an agent whose adapter cannot load.
        ConfigError: a malformed ``provider:model``.
    """
    manifest = ReportManifest.model_validate_json((report_dir / "report.json").read_bytes())
    judging = loaded.config.judging
    override = choose_judge(judging, _ANY_AGENT, judge) if judge is not None else None
    names = [override.agent.adapter] if override and override.agent else []
    options: dict[str, Any] = {
        "judging": judging,
        "config_dir": loaded.config_dir,
        "adapters": load_judge_adapters(loaded, adapters or {}, names),
        "parent_env": environ,
        "redactor": redactor,
        "weights": weights if weights is not None else weights_of(loaded.config),
        "calibration": calibration,
        "judge_override": judge,
        "policy": policy,
        "model_server_url": model_server_url,
    }
    scorer = JudgeScorer(**options, use_cache=use_cache)
    fresh = JudgeScorer(**options, use_cache=False) if rejudge > 0 else None
    rescorer = _Rescorer(scorer, judge, judging, fresh, rejudge)
    out = RescoreResult(rejudge=rejudge)
    for pair in manifest.results:
        for entry in pair.runs:
            run = await rescorer.run(report_dir, entry)
            out.runs.append(run)
            spend = run.verdicts.spend if run.verdicts and run.asked else None
            if spend is not None:
                out.calls += spend.calls
                out.cached_calls += spend.cached_calls
                out.input_tokens += spend.input_tokens
                out.output_tokens += spend.output_tokens
    out.notes = sorted(
        {n for r in out.runs if r.verdicts for n in r.verdicts.notes if "reused" in n}
    )
    out.notes += [r.rejudge_note for r in out.runs if r.rejudge_note]
    return out
