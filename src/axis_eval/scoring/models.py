"""The scoring formats: what judges return and what a scored run stores.

Two shapes matter:

- :class:`JudgeVerdicts` is everything the judges said about one run (goal check scores,
  per-interaction audits, per-category necessity). It is stored with the run, so a re-score
  recomputes every number from it without calling a judge.
- :class:`ScoreResult` is the run's AXIS Result (``score`` in ``result.json``): the composite,
  the four dimensions, how each category score came about, insights, and the judge's spend.

The pure functions that turn the first into the second live in ``scoring/composite.py``
(``score_from_verdicts``); this module holds data and validators only.
"""

import math
from collections.abc import Mapping
from typing import Literal

from pydantic import Field, field_validator, model_validator

from axis_eval._types import Category, OutputModel, round_half_up
from axis_eval._util.defaults import empty_list
from axis_eval.scoring.panel_models import PanelGrades

SCORE_SCHEMA_VERSION = 1

Signal = Literal["success", "speed", "weight", "relevance", "necessity"]
"""The five interaction signals; insights name the first minimum in this order."""

SIGNALS: tuple[Signal, ...] = ("success", "speed", "weight", "relevance", "necessity")

CheckKind = Literal["judge", "deterministic"]

Unit = float
"""A value in [0, 1]."""


class CheckVerdict(OutputModel):
    """One goal check (rubric item) with its score."""

    check: str
    """The check's text, as in the scenario's rubric (the whole string for a string judge)."""
    weight: float = Field(default=1.0, ge=0)
    """The check's resolved weight; the goal divides by the sum of weights."""
    score: int = Field(ge=0, le=10)
    """0 = not met, 5 = partially, 10 = fully. Fractions are rounded half-up."""
    rationale: str = ""
    """Why the judge (or the command) gave this score."""
    kind: CheckKind = "judge"
    """``deterministic`` for a rubric item with ``run``: exit 0 scores 10, anything else 0."""
    command: str | None = None
    """The shell command of a deterministic check."""
    exit_code: int | None = None
    """The command's exit code (None when it could not run or timed out)."""
    output: str | None = None
    """The command's combined output, possibly truncated."""

    @field_validator("score", mode="before")
    @classmethod
    def _round_fraction(cls, value: object) -> object:
        if isinstance(value, float) and math.isfinite(value):
            return round_half_up(value)
        return value


class InteractionAudit(OutputModel):
    """A judge's audit of one interaction of the sparse index (speed is never judged)."""

    interaction_id: int = Field(ge=1)
    """The interaction's id in the sparse index (``#3`` is 3)."""
    success: Unit = Field(default=1.0, ge=0, le=1)
    """Did it complete without errors, with usable results?"""
    weight: Unit = Field(default=1.0, ge=0, le=1)
    """Was it right-sized (1.0), or did it ask for far more or less than needed (0.3)?"""
    relevance: Unit = Field(default=1.0, ge=0, le=1)
    """Was its output relevant and useful for the task?"""
    rationale: str = ""


class NecessityVerdict(OutputModel):
    """A category's necessity judgment: were its interactions needed?"""

    score: Unit = Field(default=1.0, ge=0, le=1)
    unnecessary_ids: list[int] = Field(default_factory=empty_list)
    """Ids of the interactions the judge found avoidable."""
    rationale: str = ""


class JudgeSpend(OutputModel):
    """What judging this run cost, kept apart from the agent's own usage."""

    judge: str | None = None
    """Who judged: ``anthropic``/``openai`` for an API judge, else the judge agent's name."""
    model: str | None = None
    kind: Literal["api", "agent", "none"] = "none"
    """``none`` when the run needed no judge (deterministic checks only, no interactions)."""
    calls: int = Field(default=0, ge=0)
    """Judge calls made or answered from the cache."""
    cached_calls: int = Field(default=0, ge=0)
    """Calls answered from the on-disk cache (no tokens spent)."""
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = None
    """Money the judge spent (None: unknown, or simulated)."""
    cost_estimated: bool = False
    """True when the cost was computed from a price table."""
    cost_simulated: bool = False
    """The judge asked the embedded scripted model server: its tokens are the tape's
    accounting, no money was spent, and ``costUsd`` stays null."""


class JudgeVerdicts(OutputModel):
    """Everything the judges said about one run: the input of ``score_from_verdicts``.

    Stored with the run (``verdicts.json``), so changed weights or calibration re-score
    without a judge, and deterministic results survive the workspace.
    """

    schema_version: int = SCORE_SCHEMA_VERSION
    checks: list[CheckVerdict] = Field(default_factory=empty_list)
    """Goal checks in rubric order: judged and deterministic alike."""
    audits: list[InteractionAudit] = Field(default_factory=empty_list)
    """Per-interaction audits; an interaction without one keeps the defaults."""
    necessity: dict[Category, NecessityVerdict] = Field(default_factory=dict)
    """Per-category necessity; a category without one defaults to 1.0."""
    chunks: int = Field(default=1, ge=0)
    """How many pieces the transcript was split into for the judges (0: no judge called)."""
    spend: JudgeSpend | None = None
    notes: list[str] = Field(default_factory=empty_list)
    """Things to tell the reader (chunking, reused verdicts …)."""
    withheld_reason: str | None = None
    """Set when the judge failed for good: the score is withheld, never zero or invented."""
    panel: PanelGrades | None = None
    """``judging.panel``: every member's grades; ``checks`` hold their medians."""

    @model_validator(mode="after")
    def _unique_audits(self) -> "JudgeVerdicts":
        ids = [a.interaction_id for a in self.audits]
        if len(ids) != len(set(ids)):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"one audit per interaction; duplicated ids: {dupes}")
        return self


class SignalScores(OutputModel):
    """A category's five aggregated signals, each in [0, 1]."""

    success: Unit = Field(default=1.0, ge=0, le=1)
    speed: Unit = Field(default=1.0, ge=0, le=1)
    weight: Unit = Field(default=1.0, ge=0, le=1)
    relevance: Unit = Field(default=1.0, ge=0, le=1)
    necessity: Unit = Field(default=1.0, ge=0, le=1)

    def get(self, signal: Signal) -> float:
        """The value of one signal by name."""
        return float(getattr(self, signal))


class CategoryScore(OutputModel):
    """One of Environment, Service, Agent: calibrated score and how it came about."""

    score: int = Field(ge=0, le=100)
    """The calibrated 0–100 score."""
    raw: Unit = Field(ge=0, le=1)
    """Σ signal weight × signal, before calibration."""
    signals: SignalScores = Field(default_factory=SignalScores)
    interactions: int = Field(default=0, ge=0)
    """Interactions in this category (multi-category interactions count in each)."""
    audited: int = Field(default=0, ge=0)
    """Of those, how many a judge audited (the others kept the defaults)."""
    unnecessary_ids: list[int] = Field(default_factory=empty_list)
    necessity_rationale: str | None = None
    weakest_signal: Signal
    """The first minimum in the order success, speed, weight, relevance, necessity."""
    weakest_ids: list[int] = Field(default_factory=empty_list)
    """The interactions behind the weakest signal (lowest values first)."""


class CurveParams(OutputModel):
    """One category's S-curve: ``Φ((ln r − ln median) / sigma)``."""

    median: float = Field(gt=0, lt=1)
    """The raw score that calibrates to 50."""
    sigma: float = Field(default=0.5, gt=0)
    """Spread: smaller is steeper."""


class CalibrationConfig(OutputModel):
    """The S-curves per category (defaults from the scoring tables)."""

    environment: CurveParams = Field(default_factory=lambda: CurveParams(median=0.75))
    service: CurveParams = Field(default_factory=lambda: CurveParams(median=0.65))
    agent: CurveParams = Field(default_factory=lambda: CurveParams(median=0.70))

    def for_category(self, category: Category) -> CurveParams:
        """The curve of one category."""
        curve: CurveParams = getattr(self, category)
        return curve


class CompositeWeights(OutputModel):
    """Weights of the four dimensions in the composite: non-negative, summing to 1 (± 0.01)."""

    goal_achievement: float = Field(default=0.4, ge=0)
    environment: float = Field(default=0.2, ge=0)
    service: float = Field(default=0.2, ge=0)
    agent: float = Field(default=0.2, ge=0)

    @model_validator(mode="after")
    def _sum_to_one(self) -> "CompositeWeights":
        total = self.goal_achievement + self.environment + self.service + self.agent
        if total == 0:
            raise ValueError("weights that are not all zero")
        if abs(total - 1.0) > 0.01:
            raise ValueError(f"weights summing to 1 (± 0.01); they sum to {total:g}")
        return self

    @classmethod
    def of(cls, value: "CompositeWeights | Mapping[str, float] | None") -> "CompositeWeights":
        """Weights from a model, a mapping (snake or camel keys) or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, CompositeWeights):
            return value
        return cls.model_validate(dict(value))


class ScoreResult(OutputModel):
    """A run's AXIS Result (``score`` in ``result.json``).

    When ``withheld`` is true the judge failed for good: the five scores are None and
    ``withheldReason`` says why. A withheld run is never counted as a zero.
    """

    schema_version: int = SCORE_SCHEMA_VERSION
    axis_score: int | None = Field(default=None, ge=0, le=100)
    """The composite, rounded half-up."""
    goal_achievement: int | None = Field(default=None, ge=0, le=100)
    environment: int | None = Field(default=None, ge=0, le=100)
    service: int | None = Field(default=None, ge=0, le=100)
    agent: int | None = Field(default=None, ge=0, le=100)
    weights: CompositeWeights = Field(default_factory=CompositeWeights)
    calibration: CalibrationConfig = Field(default_factory=CalibrationConfig)
    checks: list[CheckVerdict] = Field(default_factory=empty_list)
    categories: dict[Category, CategoryScore] = Field(default_factory=dict)
    audits: list[InteractionAudit] = Field(default_factory=empty_list)
    """The judge's audits as given (defaults are not listed)."""
    insights: list[str] = Field(default_factory=empty_list)
    """One line per category below 75: ``Env: speed 40 (#3, #7)``."""
    withheld: bool = False
    withheld_reason: str | None = None
    judge: JudgeSpend = Field(default_factory=JudgeSpend)
    chunks: int = Field(default=1, ge=0)
    """Transcript pieces the judges read (0: no judge called)."""
    notes: list[str] = Field(default_factory=empty_list)
    panel: PanelGrades | None = None
    """``judging.panel``: every member's grades; ``checks`` hold their medians."""

    @model_validator(mode="after")
    def _withheld_has_no_numbers(self) -> "ScoreResult":
        numbers = (self.axis_score, self.goal_achievement, self.environment)
        if self.withheld:
            if self.axis_score is not None:
                raise ValueError("no axisScore on a withheld score")
            if not self.withheld_reason:
                raise ValueError("a withheldReason on a withheld score")
        elif any(n is None for n in (*numbers, self.service, self.agent)):
            raise ValueError("all five scores unless withheld")
        return self

    def dimension(self, name: str) -> int | None:
        """A dimension's score by name (``goal_achievement``, ``environment`` …)."""
        value: int | None = getattr(self, name)
        return value
