"""The five signals of each interaction and their aggregation per category (pure).

- **Speed** (heuristic): the duration's tier for the interaction's category; an interaction in
  several categories is timed by the first of service, environment, agent it belongs to.
  Aggregated with a severity-weighted mean: a value v weighs (1 − v)² + 1.
- **Success, weight, relevance** (judged per interaction): aggregated with a mean weighted by
  each interaction's context size in bytes (at least 1).
- **Necessity** (judged per category): the category's single judgment.

Nothing evaluated gives 1.0 for every signal. An interaction the judge did not audit keeps
the defaults: 1.0 everywhere, except success 0.3 when it carries an error flag.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from axis_eval._types import Category
from axis_eval.scoring.models import SIGNALS, InteractionAudit, JudgeVerdicts, Signal, SignalScores
from axis_eval.transcript.sparse_index import Interaction, SparseIndex

SIGNAL_WEIGHTS: dict[Category, dict[Signal, float]] = {
    "environment": {
        "success": 0.35,
        "speed": 0.15,
        "weight": 0.15,
        "relevance": 0.15,
        "necessity": 0.20,
    },
    "service": {
        "success": 0.25,
        "speed": 0.15,
        "weight": 0.20,
        "relevance": 0.20,
        "necessity": 0.20,
    },
    "agent": {"success": 0.15, "speed": 0.15, "weight": 0.20, "relevance": 0.25, "necessity": 0.25},
}
"""Each category's signal weights (they sum to 1)."""

SPEED_THRESHOLDS_MS: dict[Category, tuple[int, int, int, int]] = {
    "environment": (500, 2_000, 5_000, 10_000),
    "service": (2_000, 5_000, 10_000, 25_000),
    "agent": (2_000, 5_000, 15_000, 30_000),
}
"""Upper bounds (inclusive) of the excellent, good, fair and slow tiers; above: very slow."""

SPEED_TIER_SCORES: tuple[float, float, float, float, float] = (1.0, 0.9, 0.8, 0.6, 0.4)
"""Excellent, good, fair, slow, very slow."""

SPEED_PRECEDENCE: tuple[Category, ...] = ("service", "environment", "agent")
"""Which category's thresholds time a multi-category interaction (AXIS's order)."""

DEFAULT_SIGNAL = 1.0
"""What a signal is when nothing was evaluated."""

ERROR_SUCCESS = 0.3
"""Success of an unaudited interaction with an error flag."""


def speed_category(categories: Iterable[Category]) -> Category:
    """The category whose thresholds time an interaction: service > environment > agent."""
    present = set(categories)
    return next((c for c in SPEED_PRECEDENCE if c in present), "agent")


def speed_score(category: Category, duration_ms: int | None) -> float:
    """The speed tier of a duration: 1.0, 0.9, 0.8, 0.6 or 0.4; unknown or zero → 1.0."""
    if not duration_ms or duration_ms <= 0:
        return DEFAULT_SIGNAL
    for limit, score in zip(SPEED_THRESHOLDS_MS[category], SPEED_TIER_SCORES, strict=False):
        if duration_ms <= limit:
            return score
    return SPEED_TIER_SCORES[-1]


def interaction_speed(interaction: Interaction) -> float:
    """An interaction's speed, timed by its precedent category."""
    return speed_score(speed_category(interaction.categories), interaction.duration_ms)


def severity_weight(value: float) -> float:
    """How much a speed value weighs: (1 − v)² + 1 (1 for 1.0, 1.36 for 0.4)."""
    return (1.0 - value) ** 2 + 1.0


def severity_weighted_mean(values: Sequence[float]) -> float:
    """Σ wᵢvᵢ / Σ wᵢ with wᵢ = (1 − vᵢ)² + 1; 1.0 when empty. Never above the plain mean."""
    if not values:
        return DEFAULT_SIGNAL
    weights = [severity_weight(v) for v in values]
    return _unit(sum(w * v for w, v in zip(weights, values, strict=True)) / sum(weights))


def context_weighted_mean(pairs: Sequence[tuple[float, int]]) -> float:
    """Σ bᵢvᵢ / Σ bᵢ over (value, bytes) with bᵢ = max(1, bytes); 1.0 when empty."""
    if not pairs:
        return DEFAULT_SIGNAL
    weights = [max(1, size) for _, size in pairs]
    total = sum(w * v for w, (v, _) in zip(weights, pairs, strict=True))
    return _unit(total / sum(weights))


def default_audit(interaction: Interaction) -> InteractionAudit:
    """The audit an unaudited interaction keeps: all 1.0, success 0.3 with an error flag."""
    return InteractionAudit(
        interaction_id=interaction.id,
        success=ERROR_SUCCESS if interaction.is_error else DEFAULT_SIGNAL,
        rationale="default",
    )


@dataclass(frozen=True)
class InteractionSignals:
    """One interaction's four per-interaction signals (necessity is per category)."""

    interaction: Interaction
    success: float
    speed: float
    weight: float
    relevance: float
    audited: bool
    """False when the defaults were used."""

    def get(self, signal: Signal) -> float:
        """A signal by name (necessity is not per interaction: 1.0)."""
        return DEFAULT_SIGNAL if signal == "necessity" else float(getattr(self, signal))


def interaction_signals(
    index: SparseIndex, audits: Iterable[InteractionAudit]
) -> list[InteractionSignals]:
    """Every interaction's signals: its audit (or the defaults) and its speed tier."""
    by_id = {a.interaction_id: a for a in audits}
    out = []
    for interaction in index.interactions:
        audit = by_id.get(interaction.id)
        used = audit or default_audit(interaction)
        out.append(
            InteractionSignals(
                interaction=interaction,
                success=used.success,
                speed=interaction_speed(interaction),
                weight=used.weight,
                relevance=used.relevance,
                audited=audit is not None,
            )
        )
    return out


def aggregate_signals(
    members: Sequence[InteractionSignals], necessity: float = DEFAULT_SIGNAL
) -> SignalScores:
    """A category's five signals from its interactions' signals and its necessity."""

    def weighted(signal: Signal) -> float:
        return context_weighted_mean(
            [(m.get(signal), m.interaction.context_bytes) for m in members]
        )

    return SignalScores(
        success=weighted("success"),
        speed=severity_weighted_mean([m.speed for m in members]),
        weight=weighted("weight"),
        relevance=weighted("relevance"),
        necessity=_unit(necessity) if members else DEFAULT_SIGNAL,
    )


def category_raw(category: Category, signals: SignalScores) -> float:
    """Σ signal weight × signal, in [0, 1]."""
    weights = SIGNAL_WEIGHTS[category]
    return _unit(round(sum(weights[s] * signals.get(s) for s in SIGNALS), 12))


def necessity_of(category: Category, verdicts: JudgeVerdicts) -> float:
    """The category's necessity judgment, 1.0 when there is none."""
    verdict = verdicts.necessity.get(category)
    return DEFAULT_SIGNAL if verdict is None else verdict.score


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))
