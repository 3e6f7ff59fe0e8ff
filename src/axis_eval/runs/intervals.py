"""Intervals and tests for few runs (docs/statistics.md), without scipy.

- A pair with 3+ scored runs: per score, a 95 % Student t interval for the mean (n − 1 df)
  and the exact order-statistic interval for the median (distribution-free).
- An agent's suite mean composite: a t interval over its scenarios' mean composites
  (each scenario one cluster, clusters − 1 df).
- ``axis reports diff``: per pair a Welch t interval for B − A of the mean scores, and a
  paired t test of the composite's mean deltas across the pairs both reports hold.

The t distribution's CDF comes from the regularized incomplete beta function (its continued
fraction, evaluated with the modified Lentz method); quantiles by bisection on the CDF.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from axis_eval._types import SCORES, camel
from axis_eval.report.models import (
    AgentInterval,
    DeltaInterval,
    PairedTest,
    PairEntry,
    ReportManifest,
    RunEntry,
    ScoreInterval,
)

CONFIDENCE = 0.95
MIN_RUNS = 3
"""Fewer scored runs than this get no pair interval."""
_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t with ``df`` (real, > 0) degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T ≤ t) = p (0 < p < 1), by bisection to 1e-10."""
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    while high - low > 1e-10:
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2.0


def t_critical(df: float, level: float = CONFIDENCE) -> float:
    """The two-sided critical value: t(1 − (1 − level)/2, df)."""
    return t_quantile(1.0 - (1.0 - level) / 2.0, df)


def _clip(value: float) -> float:
    return round(min(100.0, max(0.0, value)), 2)


def median_rank(n: int, level: float = CONFIDENCE) -> tuple[int, float]:
    """The largest k with P(x(k) ≤ median ≤ x(n−k+1)) ≥ level, and that coverage
    (1 − 2·P(Binomial(n, ½) ≤ k − 1)); k = 1 (the range) when even it falls short."""
    best = (1, 1.0 - 2.0 * 0.5**n)
    below = 0
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1)
        coverage = 1.0 - 2.0 * below / 2**n
        if coverage < level:
            break
        best = (k, coverage)
    return best


def score_interval(values: Sequence[float]) -> ScoreInterval:
    """The t interval for the mean and the order-statistic interval for the median."""
    n = len(values)
    mean = statistics.fmean(values)
    half = t_critical(n - 1) * statistics.stdev(values) / math.sqrt(n)
    ordered = sorted(values)
    k, coverage = median_rank(n)
    return ScoreInterval(
        n=n,
        mean=round(mean, 2),
        low=_clip(mean - half),
        high=_clip(mean + half),
        df=n - 1,
        median=round(statistics.median(values), 2),
        median_low=round(ordered[k - 1], 2),
        median_high=round(ordered[n - k], 2),
        median_coverage=round(coverage, 4),
    )


def scored_values(runs: Sequence[RunEntry], name: str) -> list[float]:
    """One score (``axis_score`` or a dimension) of each scored run that has it."""
    out: list[float] = []
    for run in runs:
        score = run.score
        if run.status != "completed" or score is None or score.withheld:
            continue
        if score.axis_score is None:
            continue
        value = score.dimension(name)
        if value is not None:
            out.append(float(value))
    return out


def pair_intervals(runs: Sequence[RunEntry]) -> dict[str, ScoreInterval] | None:
    """Per score (camelCase name) its interval; None below :data:`MIN_RUNS` scored runs."""
    out = {
        camel(name): score_interval(values)
        for name in SCORES
        if len(values := scored_values(runs, name)) >= MIN_RUNS
    }
    return out or None


def agent_intervals(pairs: Sequence[PairEntry]) -> list[AgentInterval] | None:
    """Per agent (first-seen order): the mean of its scenarios' mean composites and the
    t interval over those cluster means; a note instead below 2 clusters."""
    clusters: dict[str, dict[str, list[float]]] = {}
    for pair in pairs:
        values = scored_values(pair.runs, "axis_score")
        by_scenario = clusters.setdefault(pair.agent_name, {})
        if values:
            by_scenario.setdefault(pair.base_key, []).extend(values)
    out: list[AgentInterval] = []
    for agent, by_scenario in clusters.items():
        means = [statistics.fmean(v) for v in by_scenario.values()]
        runs = sum(len(v) for v in by_scenario.values())
        entry = AgentInterval(agent_name=agent, clusters=len(means), runs=runs)
        if means:
            entry.mean = round(statistics.fmean(means), 2)
        if len(means) < 2:
            entry.note = f"{len(means)} scenario scored: a suite interval needs 2 or more"
        else:
            g = len(means)
            half = t_critical(g - 1) * statistics.stdev(means) / math.sqrt(g)
            centre = statistics.fmean(means)
            entry.low, entry.high, entry.df = _clip(centre - half), _clip(centre + half), g - 1
        out.append(entry)
    return out or None


def welch_interval(a: Sequence[float], b: Sequence[float]) -> DeltaInterval | None:
    """B − A of the means with a Welch t interval; None when a side has under 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    delta = statistics.fmean(b) - statistics.fmean(a)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return DeltaInterval(mean_delta=round(delta, 2), low=round(delta, 2), high=round(delta, 2))
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_critical(df) * se
    return DeltaInterval(
        mean_delta=round(delta, 2),
        low=round(delta - half, 2),
        high=round(delta + half, 2),
        df=round(df, 2),
    )


def paired_test(deltas: Sequence[float]) -> PairedTest:
    """A two-sided paired t test (H0: mean delta 0) with the 95 % interval of the mean."""
    n = len(deltas)
    if n < 2:
        return PairedTest(
            n=n,
            mean_delta=round(deltas[0], 2) if deltas else None,
            note=f"{n} pair in both reports scored: a paired test needs 2 or more",
        )
    mean = statistics.fmean(deltas)
    sd = statistics.stdev(deltas)
    se = sd / math.sqrt(n)
    test = PairedTest(n=n, mean_delta=round(mean, 2), stdev=round(sd, 2), df=n - 1)
    if se == 0:
        test.t = 0.0 if mean == 0 else None
        test.p_value = 1.0 if mean == 0 else 0.0
        test.low = test.high = round(mean, 2)
        test.note = "every pair moved by the same amount: no spread to test against"
        return test
    t = mean / se
    half = t_critical(n - 1) * se
    test.t = round(t, 3)
    test.p_value = round(2.0 * (1.0 - t_cdf(abs(t), n - 1)), 4)
    test.low, test.high = round(mean - half, 2), round(mean + half, 2)
    return test


def paired_deltas(a: ReportManifest, b: ReportManifest) -> list[float]:
    """Per pair both reports scored (A's order): B's mean composite − A's."""
    right = {(p.scenario_key, p.agent_name): p for p in b.results}
    out: list[float] = []
    for pair in a.results:
        other = right.get((pair.scenario_key, pair.agent_name))
        if other is None:
            continue
        before = scored_values(pair.runs, "axis_score")
        after = scored_values(other.runs, "axis_score")
        if before and after:
            out.append(statistics.fmean(after) - statistics.fmean(before))
    return out
