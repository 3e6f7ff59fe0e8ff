"""Insights: for each category below 75, its weakest signal and the interactions behind it."""

from __future__ import annotations

from collections.abc import Sequence

from axis_eval._types import Category, round_half_up
from axis_eval.scoring.models import SIGNALS, CategoryScore, Signal, SignalScores
from axis_eval.scoring.signals import InteractionSignals

INSIGHT_BELOW = 75
"""A category scoring below this gets an insight line."""

INSIGHT_IDS = 5
"""At most this many interaction ids are named in an insight line."""

CATEGORY_SHORT: dict[Category, str] = {"environment": "Env", "service": "Svc", "agent": "Agent"}

BANDS: tuple[tuple[int, str], ...] = ((90, "Excellent"), (75, "Good"), (50, "Fair"), (0, "Poor"))
"""Lower bounds of the interpretation bands."""


def band(score: int) -> str:
    """Excellent (90–100), Good (75–89), Fair (50–74) or Poor (< 50)."""
    return next(name for floor, name in BANDS if score >= floor)


def weakest_signal(signals: SignalScores) -> Signal:
    """The first minimum in the order success, speed, weight, relevance, necessity."""
    return min(SIGNALS, key=signals.get)  # min keeps the first of equal values


def weakest_ids(
    signal: Signal, members: Sequence[InteractionSignals], unnecessary_ids: Sequence[int]
) -> list[int]:
    """The interactions behind a signal: the unnecessary ones for necessity, else those below
    1.0, lowest value first (then by id)."""
    if signal == "necessity":
        return sorted(set(unnecessary_ids))
    below = [m for m in members if m.get(signal) < 1.0]
    below.sort(key=lambda m: (m.get(signal), m.interaction.id))
    return [m.interaction.id for m in below]


def insight_line(category: Category, score: CategoryScore) -> str:
    """``Env: speed 40 (#3, #7)``: the weakest signal as 0–100 and up to five ids."""
    value = round_half_up(score.signals.get(score.weakest_signal) * 100)
    line = f"{CATEGORY_SHORT[category]}: {score.weakest_signal} {value}"
    ids = score.weakest_ids
    if ids:
        shown = ", ".join(f"#{i}" for i in ids[:INSIGHT_IDS])
        more = f" +{len(ids) - INSIGHT_IDS} more" if len(ids) > INSIGHT_IDS else ""
        line += f" ({shown}{more})"
    return line


def insights(categories: dict[Category, CategoryScore]) -> list[str]:
    """One line per category scoring below 75, in the order Env, Svc, Agent."""
    return [
        insight_line(c, categories[c])
        for c in ("environment", "service", "agent")
        if c in categories and categories[c].score < INSIGHT_BELOW
    ]
