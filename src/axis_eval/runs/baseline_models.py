"""Baseline files (``.axis/baselines/<name>.json``) and baseline comparisons.

A baseline file has AXIS's shape, ``{name, createdAt, updatedAt, results: {<scenarioKey>:
{<agentName>: entry}}}``, and each entry AXIS's fields (``axisScore``, the four dimensions,
``durationMs``, ``tokens``, ``fromReportId``, ``timestamp``). axis-eval adds, per pair, the
composite of every scored run (``runScores``), their sample standard deviation
(``stdev``), the pair's ``reliability`` and its run count (``runs``); from a re-judged
report (``axis score --rejudge``) also the judge's own spread of the composite
(``judgeStdev``, ``rejudged``). AXIS's own files lack those fields and read as single-run
baselines.
"""

from typing import Literal

from pydantic import ConfigDict, Field

from axis_eval._types import OutputModel
from axis_eval._util.defaults import empty_list
from axis_eval.report.models import Reliability

Verdict = Literal["improved", "regressed", "unchanged", "unscored"]
"""``unscored``: the pair ran but no run of it scored now (see its reliability)."""


class BaselineModel(OutputModel):
    """camelCase on disk like every axis-eval file; unknown fields are ignored on read, so
    baseline files written by newer AXIS versions still load."""

    model_config = ConfigDict(extra="ignore")  # merged into OutputModel's


class BaselineEntry(BaselineModel):
    """One (scenario, agent) pair as the baseline remembers it: its representative's numbers."""

    axis_score: float
    goal_achievement: float
    environment: float
    service: float
    agent: float
    duration_ms: int = 0
    tokens: int = 0
    """Input + output + cache-read tokens of the representative run."""
    from_report_id: str
    timestamp: str
    """The source report's timestamp."""
    runs: int | None = None
    """How many runs the pair had (absent in AXIS's files: one)."""
    run_scores: list[float] = Field(default_factory=empty_list)
    """The composite of every scored run, by run index (absent in AXIS's files)."""
    stdev: float | None = None
    """Sample standard deviation (n − 1) of ``runScores``; None with fewer than two."""
    reliability: Reliability | None = None
    """Scored runs out of the runs that count (absent in AXIS's files: 1/1)."""
    judge_stdev: float | None = None
    """The judge's pooled spread of the composite (the report's ``judgeNoise``); None when
    the source report was not re-judged."""
    rejudged: int | None = None
    """K of the source report's ``--rejudge K``."""

    @property
    def run_count(self) -> int:
        """The pair's run count (1 for an AXIS entry)."""
        return self.runs or 1

    @property
    def scores(self) -> list[float]:
        """Every run's composite; an AXIS entry has just its ``axisScore``."""
        return list(self.run_scores) or [self.axis_score]

    @property
    def noise_measured(self) -> bool:
        """True when σ was measured (two or more scored runs)."""
        return self.stdev is not None

    @property
    def reliability_or_default(self) -> Reliability:
        """The stored reliability, or 1/1 (an AXIS entry exists only for a scored run)."""
        return self.reliability or Reliability(succeeded=1, total=1)


class Baseline(BaselineModel):
    """A named baseline: ``results[scenarioKey][agentName]``."""

    name: str
    created_at: str
    updated_at: str
    results: dict[str, dict[str, BaselineEntry]] = Field(default_factory=dict)

    def pair_count(self) -> int:
        """How many (scenario, agent) entries it holds."""
        return sum(len(agents) for agents in self.results.values())

    def agent_names(self) -> set[str]:
        """Every agent name it mentions."""
        return {a for agents in self.results.values() for a in agents}


class DimensionDelta(BaselineModel):
    """One dimension: baseline, current, delta (shown, never gating)."""

    baseline: float
    current: float | None = None
    delta: float | None = None


class ReliabilityDelta(BaselineModel):
    """Reliability then and now, and whether the drop counts as a regression."""

    baseline: Reliability
    current: Reliability
    expected: float
    """Successes the current run count would have at the baseline's rate."""
    regressed: bool


class ComparisonEntry(BaselineModel):
    """A pair present in both the baseline and the report."""

    scenario_key: str
    agent_name: str
    baseline: float
    current: float | None = None
    """The current representative's composite (None when no run scored)."""
    delta: float | None = None
    band: float
    """The noise band: ``max(1, 2·sqrt(σ² + σ_judge²))`` over the baseline's measured
    spreads (just max(1, 2σ) without re-judging; 1 when neither was measured)."""
    noise_measured: bool
    """False for a single-run baseline: the band is the floor of 1."""
    baseline_runs: int
    current_runs: int
    stdev: float | None = None
    """The baseline's σ."""
    judge_stdev: float | None = None
    """The baseline's judge σ (re-judged source report), part of ``band``."""
    verdict: Verdict
    """From the composite alone; a reliability regression is flagged separately."""
    score_regressed: bool
    reliability: ReliabilityDelta
    regressed: bool
    """Score or reliability regression."""
    categories: dict[str, DimensionDelta] = Field(default_factory=dict)
    """goalAchievement, environment, service, agent."""
    p_value: float | None = None
    """Two-sided Mann–Whitney U p-value over the run composites (informative only)."""
    p_value_method: Literal["exact", "normal", "insufficient n"] = "insufficient n"


class PairRef(BaselineModel):
    """A pair named by scenario key and agent."""

    scenario_key: str
    agent_name: str
    score: float | None = None


class ComparisonSummary(BaselineModel):
    """AXIS's counts plus the regressions by kind and the vanished pairs."""

    improved: int = 0
    regressed: int = 0
    unchanged: int = 0
    unscored: int = 0
    new_scenarios: int = 0
    """Distinct scenario keys of new pairs (AXIS's count)."""
    new_pairs: int = 0
    vanished_pairs: int = 0
    score_regressions: int = 0
    reliability_regressions: int = 0


class BaselineComparison(BaselineModel):
    """``axis baseline compare``: the baseline against one report."""

    baseline_name: str
    report_id: str
    entries: list[ComparisonEntry] = Field(default_factory=empty_list)
    new: list[PairRef] = Field(default_factory=empty_list)
    """Scored pairs of the report the baseline lacks."""
    vanished: list[PairRef] = Field(default_factory=empty_list)
    """Baseline pairs the report lacks."""
    summary: ComparisonSummary = Field(default_factory=ComparisonSummary)

    @property
    def has_regression(self) -> bool:
        """True when any pair regressed (score or reliability): exit 1."""
        return self.summary.regressed > 0
