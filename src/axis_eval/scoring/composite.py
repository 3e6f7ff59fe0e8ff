"""From stored verdicts to the AXIS Result: goal, categories, composite (pure, no I/O).

:func:`score_from_verdicts` is the single entry point: the judge side gathers
:class:`~axis_eval.scoring.models.JudgeVerdicts` (or none, for a run that needs no LLM)
and calls it; ``axis score`` calls it again with changed weights or calibration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from axis_eval._types import CATEGORIES, Category, round_half_up
from axis_eval.scoring.calibration import calibrate_category
from axis_eval.scoring.insights import insights, weakest_ids, weakest_signal
from axis_eval.scoring.models import (
    CalibrationConfig,
    CategoryScore,
    CheckVerdict,
    CompositeWeights,
    JudgeSpend,
    JudgeVerdicts,
    ScoreResult,
)
from axis_eval.scoring.signals import (
    InteractionSignals,
    aggregate_signals,
    category_raw,
    interaction_signals,
    necessity_of,
)
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import SparseIndex, build_sparse_index

WeightsLike = CompositeWeights | Mapping[str, float] | None


def goal_score(checks: Sequence[CheckVerdict]) -> int:
    """Σ wᵢ · scoreᵢ × 10 / Σ wᵢ, rounded half-up.

    No checks → 0 (as AXIS). Checks whose weights are all zero count equally.
    """
    if not checks:
        return 0
    total = sum(c.weight for c in checks)
    if total <= 0:
        return round_half_up(sum(c.score * 10 for c in checks) / len(checks))
    return round_half_up(sum(c.weight * c.score * 10 for c in checks) / total)


def composite_score(
    goal: int, environment: int, service: int, agent: int, weights: WeightsLike = None
) -> int:
    """Goal × 0.4 + Environment × 0.2 + Service × 0.2 + Agent × 0.2 (or the given weights,
    which sum to 1 ± 0.01), rounded half-up and kept within 0–100."""
    w = CompositeWeights.of(weights)
    value = (
        goal * w.goal_achievement
        + environment * w.environment
        + service * w.service
        + agent * w.agent
    )
    return min(100, max(0, round_half_up(value)))


def category_score(
    category: Category,
    members: Sequence[InteractionSignals],
    verdicts: JudgeVerdicts,
    calibration: CalibrationConfig | None = None,
) -> CategoryScore:
    """One category's calibrated score from its interactions' signals and its necessity."""
    verdict = verdicts.necessity.get(category) if members else None
    signals = aggregate_signals(members, necessity_of(category, verdicts))
    raw = category_raw(category, signals)
    member_ids = {m.interaction.id for m in members}
    unnecessary = sorted({i for i in verdict.unnecessary_ids if i in member_ids}) if verdict else []
    weakest = weakest_signal(signals)
    return CategoryScore(
        score=calibrate_category(raw, category, calibration),
        raw=raw,
        signals=signals,
        interactions=len(members),
        audited=sum(m.audited for m in members),
        unnecessary_ids=unnecessary,
        necessity_rationale=verdict.rationale if verdict else None,
        weakest_signal=weakest,
        weakest_ids=weakest_ids(weakest, members, unnecessary),
    )


def score_from_verdicts(
    transcript: Transcript | None,
    sparse_index: SparseIndex | None,
    verdicts: JudgeVerdicts | None = None,
    weights: WeightsLike = None,
    calibration: CalibrationConfig | None = None,
) -> ScoreResult:
    """The AXIS Result of a run from what the judges said (pure; no judge is called).

    ``sparse_index`` is built from ``transcript`` when not given (one of them is needed).
    ``verdicts`` None means nothing was judged: the checks list is empty and every
    interaction keeps the defaults. Verdicts with a ``withheldReason`` give a withheld
    result. Audits and unnecessary ids naming no interaction of the index are ignored
    (with a note).
    """
    if sparse_index is None:
        if transcript is None:
            raise ValueError("score_from_verdicts needs a transcript or a sparse index")
        sparse_index = build_sparse_index(transcript)
    verdicts = verdicts or JudgeVerdicts(chunks=0)
    w = CompositeWeights.of(weights)
    cal = calibration or CalibrationConfig()
    if verdicts.withheld_reason:
        return withhold(
            verdicts.withheld_reason,
            checks=verdicts.checks,
            spend=verdicts.spend,
            chunks=verdicts.chunks,
            notes=verdicts.notes,
            weights=w,
            calibration=cal,
        )
    notes = list(verdicts.notes)
    known = {i.id for i in sparse_index.interactions}
    stray = sorted({a.interaction_id for a in verdicts.audits} - known)
    if stray:
        notes.append(f"ignored audits of unknown interactions: {', '.join(map(str, stray))}")
    per_interaction = interaction_signals(sparse_index, verdicts.audits)
    categories = {
        c: category_score(
            c, [s for s in per_interaction if c in s.interaction.categories], verdicts, cal
        )
        for c in CATEGORIES
    }
    goal = goal_score(verdicts.checks)
    if not verdicts.checks:
        notes.append("no goal checks: goal achievement is 0")
    env, svc, agent = (categories[c].score for c in CATEGORIES)
    return ScoreResult(
        axis_score=composite_score(goal, env, svc, agent, w),
        goal_achievement=goal,
        environment=env,
        service=svc,
        agent=agent,
        weights=w,
        calibration=cal,
        checks=list(verdicts.checks),
        categories=categories,
        audits=[a for a in verdicts.audits if a.interaction_id in known],
        insights=insights(categories),
        judge=verdicts.spend or JudgeSpend(),
        chunks=verdicts.chunks,
        notes=notes,
        panel=verdicts.panel,
    )


def withhold(
    reason: str,
    *,
    checks: Sequence[CheckVerdict] = (),
    spend: JudgeSpend | None = None,
    chunks: int = 0,
    notes: Sequence[str] = (),
    weights: WeightsLike = None,
    calibration: CalibrationConfig | None = None,
) -> ScoreResult:
    """A withheld result: no numbers, the reason, and whatever was learnt before failing."""
    return ScoreResult(
        withheld=True,
        withheld_reason=reason,
        weights=CompositeWeights.of(weights),
        calibration=calibration or CalibrationConfig(),
        checks=list(checks),
        judge=spend or JudgeSpend(),
        chunks=chunks,
        notes=list(notes),
    )


def rescore(
    result: ScoreResult,
    sparse_index: SparseIndex,
    verdicts: JudgeVerdicts,
    weights: WeightsLike = None,
    calibration: CalibrationConfig | None = None,
) -> ScoreResult:
    """Score again from stored verdicts, keeping the earlier weights/calibration unless given."""
    return score_from_verdicts(
        None,
        sparse_index,
        verdicts,
        weights if weights is not None else result.weights,
        calibration if calibration is not None else result.calibration,
    )
