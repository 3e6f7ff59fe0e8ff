"""Adaptive repeats (``--runs auto``, ``settings.runs: {min, max, target}``): the policy.

Every adaptive pair starts with ``min`` runs. After each round the engine asks
:func:`next_round` which pairs need two more: those whose composite interval is still wider
than ``target`` points (full width) and that have run fewer than ``max`` times. So a pair
stops only at one of the pre-registered looks ``min, min + 2, …, max`` (odd counts).

Optional stopping is what makes a naive rule lie: looking after every round and stopping as
soon as an ordinary 95 % interval is narrow enough misses the mean more than 5 % of the
time. Here the ``1 − confidence`` error is split evenly over the K looks (Bonferroni): each
look's interval is built at level ``1 − α/K``, so the chance that *any* look's interval
misses the mean is at most α, whatever the stopping rule does with them. Two bounds:

- ``t``: Student t at ``1 − α/K`` with n − 1 df around the mean of the scored composites.
  Exact when run scores are normal; zero spread gives a zero-width interval (stop at min).
- ``hoeffding``: ``100 · sqrt(ln(2K/α) / (2n))`` around the mean: valid for any scores in
  0–100 but at least ~53 points wide at 9 runs, so only a loose ``target`` is ever met.

Pure functions over numbers and report entries: no processes (docs/statistics.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from axis_eval.config.models import AdaptiveRuns
from axis_eval.planning.models import JobSpec
from axis_eval.report.adaptive_models import AdaptiveStop, StopReason
from axis_eval.report.models import PairEntry
from axis_eval.runs.aggregate import scored_composites
from axis_eval.runs.intervals import t_quantile

CONFIDENCE = 0.95
"""The overall confidence of every adaptive pair's sequence of intervals."""
SCORE_RANGE = 100.0


def looks(rule: AdaptiveRuns) -> list[int]:
    """The run counts where a pair may stop: ``min, min + 2, …, max``."""
    return list(range(rule.min, rule.max + 1, 2))


def half_width(values: Sequence[float], rule: AdaptiveRuns) -> float | None:
    """The interval's half-width at this look (None: under 2 values)."""
    n = len(values)
    if n < 2:
        return None
    alpha = (1.0 - CONFIDENCE) / len(looks(rule))
    if rule.rule == "hoeffding":
        return SCORE_RANGE * math.sqrt(math.log(2.0 / alpha) / (2.0 * n))
    return _t_critical(alpha, n - 1) * statistics.stdev(values) / math.sqrt(n)


@lru_cache(maxsize=256)
def _t_critical(alpha: float, df: int) -> float:
    """t(1 − alpha/2, df): a look's two-sided critical value (few distinct ones)."""
    return t_quantile(1.0 - alpha / 2.0, df)


@dataclass(frozen=True)
class Decision:
    """What the rule says after a look."""

    more: bool
    """Two more runs are needed."""
    reason: StopReason | None
    """Why it stops (None: it goes on)."""
    low: float | None = None
    high: float | None = None

    @property
    def width(self) -> float | None:
        """Full width of the interval (upper − lower)."""
        return None if self.low is None or self.high is None else self.high - self.low


def decide(values: Sequence[float], runs_done: int, rule: AdaptiveRuns) -> Decision:
    """After ``runs_done`` runs with these scored composites: stop, or two more?"""
    radius = half_width(values, rule)
    if radius is None:
        return Decision(False, "runs failed")
    mean = statistics.fmean(values)
    low, high = mean - radius, mean + radius
    if high - low <= rule.target:
        return Decision(False, "target reached", low, high)
    if runs_done + 2 > rule.max:
        return Decision(False, "max reached", low, high)
    return Decision(True, None, low, high)


def stop_record(
    entry: PairEntry, rule: AdaptiveRuns, *, stopped: bool = False, running: bool = False
) -> AdaptiveStop:
    """The pair's ``adaptive`` field from its runs as the report holds them; ``stopped``:
    the run ended early (interrupt, run limit), so a pair that wanted more says so;
    ``running``: its round is under way, no reason yet."""
    composites = scored_composites(entry.runs)
    done = len(entry.runs)
    decision = decide(list(composites.values()), done, rule)
    reason = decision.reason if not decision.more else ("run stopped" if stopped else None)
    if running:
        reason = None
    return AdaptiveStop(
        rule=rule.rule,
        min=rule.min,
        max=rule.max,
        target=rule.target,
        confidence=CONFIDENCE,
        looks=looks(rule),
        runs=done,
        scored=len(composites),
        width=decision.width,
        low=decision.low,
        high=decision.high,
        reason=reason,
    )


def next_round(
    entries: Sequence[PairEntry],
    rules: dict[tuple[str, str], AdaptiveRuns],
    last_jobs: dict[tuple[str, str], JobSpec],
    next_number: int,
) -> list[JobSpec]:
    """The next round's jobs: two more runs for every adaptive pair that needs them.

    Run-major: every such pair's first extra run before any pair's second (both after all
    the runs before them). ``last_jobs``: each pair's last job, the template of its new ones
    (new run indexes, new job numbers from ``next_number``, the pair's new run count).
    """
    growing: list[JobSpec] = []
    for entry in entries:
        key = (entry.scenario_key, entry.agent_name)
        rule = rules.get(key)
        if rule is None or key not in last_jobs:
            continue
        done = len(entry.runs)
        if decide(list(scored_composites(entry.runs).values()), done, rule).more:
            growing.append(last_jobs[key])
    jobs: list[JobSpec] = []
    for step in (1, 2):
        for last in growing:
            jobs.append(
                last.model_copy(
                    update={
                        "number": next_number + len(jobs),
                        "run_index": last.run_index + step,
                        "run_count": last.run_index + 2,
                    }
                )
            )
    return jobs
