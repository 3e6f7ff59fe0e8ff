"""From runs to pairs: the representative run, spread, reliability, pass rates, the summary
(its spend: :mod:`.spend`).

One selection function (:func:`pick_representative`) serves both the live view and the
report, so the final live row and the report's headline are the same run's score by
construction. It needs only run indexes and composites, which the live view has too.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from axis_eval._types import SCORES, JobStatus, camel
from axis_eval.report.models import (
    RESULT_FILE,
    PairDiff,
    PairEntry,
    PassRates,
    Reliability,
    ReportDiff,
    ReportManifest,
    RunEntry,
    ScoreDelta,
    Spread,
    SpreadStats,
    Summary,
)
from axis_eval.runs.agreement import pair_agreement, suite_agreement
from axis_eval.runs.intervals import (
    agent_intervals,
    pair_intervals,
    paired_deltas,
    paired_test,
    scored_values,
    welch_interval,
)
from axis_eval.runs.load import load_warning
from axis_eval.runs.spend import spend_of

DEFAULT_PASS_SCORE = 75


@dataclass(frozen=True)
class PassGate:
    """``--pass-score`` and ``--min-pass-rate``."""

    pass_score: int = DEFAULT_PASS_SCORE
    min_pass_rate: float | None = None


class _Score(Protocol):
    @property
    def withheld(self) -> bool: ...
    @property
    def axis_score(self) -> int | None: ...


class ScoredRun(Protocol):
    """What the composite rule reads of a run: a report's ``RunEntry``, or the light read
    ``axis view`` keeps (``view.catalog_models.RunHead``)."""

    @property
    def run_index(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def score(self) -> _Score | None: ...


def composite(run: ScoredRun) -> float | None:
    """A run's composite score, when it completed, was scored and was not withheld."""
    score = run.score
    if run.status != "completed" or score is None or score.withheld:
        return None
    return None if score.axis_score is None else float(score.axis_score)


def pair_duration_ms(pair: PairEntry) -> int:
    """Milliseconds every run of the pair took (a repeated pair's runs add up)."""
    return sum(r.duration_ms for r in pair.runs) or pair.duration_ms


def pick_representative(composites: Mapping[int, float]) -> int | None:
    """The run index whose composite is nearest the median; ties go to the lowest index.

    ``composites`` maps run index → composite of the successful, scored runs only.
    """
    if not composites:
        return None
    median = statistics.median(composites.values())
    return min(composites, key=lambda i: (abs(composites[i] - median), i))


def scored_composites(runs: Sequence[ScoredRun]) -> dict[int, float]:
    """Run index → composite for the runs that count towards the score."""
    return {r.run_index: c for r in runs if (c := composite(r)) is not None}


def representative(runs: Sequence[RunEntry]) -> RunEntry | None:
    """The successful run whose composite is nearest the median; ties to the lowest index.

    Without scores (``--no-score``, or every score withheld) it is the lowest-index
    completed run. Failed and cancelled runs are never candidates, and neither are runs
    whose score was withheld while others have one.
    """
    index = pick_representative(scored_composites(runs))
    if index is not None:
        return next(r for r in runs if r.run_index == index)
    completed = [r for r in runs if r.status == "completed"]
    return min(completed, key=lambda r: r.run_index) if completed else None


def _scoring(runs: Sequence[RunEntry]) -> bool:
    """Whether these runs were judged (some run carries a score, even a withheld one)."""
    return any(r.score is not None for r in runs)


def _succeeded(run: RunEntry, scoring: bool) -> bool:
    return composite(run) is not None if scoring else run.status == "completed"


def pair_status(runs: Sequence[RunEntry]) -> JobStatus:
    """Completed when any run scored (unjudged: any run completed); failed when none did."""
    scoring = _scoring(runs)
    if any(_succeeded(r, scoring) for r in runs):
        return "completed"
    if any(r.status == "cancelled" for r in runs):
        return "cancelled"
    return "failed"


def _withheld(run: RunEntry) -> bool:
    return run.score is not None and run.score.withheld


def _infrastructure(run: RunEntry) -> bool:
    return run.status == "failed" and run.error_kind == "infrastructure"


def _counted(runs: Sequence[RunEntry]) -> list[RunEntry]:
    """The reliability denominator: finished runs whose measurement did not fail (neither
    the judge, withheld, nor the infrastructure: a sandbox or worker that could not run it)."""
    return [
        r for r in runs if r.status != "cancelled" and not _withheld(r) and not _infrastructure(r)
    ]


def reliability(runs: Sequence[RunEntry]) -> Reliability:
    """Succeeded / total, where withheld, infrastructure-failed and cancelled runs leave the
    denominator."""
    scoring = _scoring(runs)
    counted = _counted(runs)
    return Reliability(
        succeeded=sum(_succeeded(r, scoring) for r in counted),
        total=len(counted),
        withheld=sum(_withheld(r) for r in runs if r.status != "cancelled"),
        infrastructure=sum(_infrastructure(r) for r in runs),
    )


def describe_reliability(rel: Reliability, *, scored: bool = True) -> str:
    """``2/2 scored (1 withheld, 1 infrastructure)``, as the seed writes it (plus the
    infrastructure failures)."""
    text = f"{rel.succeeded}/{rel.total} {'scored' if scored else 'completed'}"
    apart = [f"{rel.withheld} withheld"] if rel.withheld else []
    if rel.infrastructure:
        apart.append(f"{rel.infrastructure} infrastructure")
    return text + (f" ({', '.join(apart)})" if apart else "")


def _stdev(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def spread(runs: Sequence[RunEntry]) -> Spread | None:
    """Median, min, max, mean and sample σ (n − 1) of the scored composites."""
    composites = scored_composites(runs)
    if not composites:
        return None
    values = list(composites.values())
    sd = _stdev(values)
    return Spread(
        n=len(values),
        axis_score=SpreadStats(
            median=round(statistics.median(values), 2),
            min=round(min(values), 2),
            max=round(max(values), 2),
            mean=round(statistics.fmean(values), 2),
            stdev=None if sd is None else round(sd, 2),
        ),
        representative_run_index=pick_representative(composites),
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k of the n runs passes."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all k of k runs drawn from the n pass."""
    return math.comb(c, k) / math.comb(n, k)


def pass_rates(runs: Sequence[RunEntry], gate: PassGate) -> PassRates | None:
    """pass@k and pass^k for k = 1 … n, and whether ``--min-pass-rate`` fails the pair."""
    if not _scoring(runs):
        return None
    counted = _counted(runs)
    n = len(counted)
    c = sum((s := composite(r)) is not None and s >= gate.pass_score for r in counted)
    rate = c / n if n else None
    return PassRates(
        pass_score=gate.pass_score,
        min_pass_rate=gate.min_pass_rate,
        n=n,
        passed=c,
        rate=None if rate is None else round(rate, 4),
        pass_at_k=[round(pass_at_k(n, c, k), 4) for k in range(1, n + 1)],
        pass_hat_k=[round(pass_hat_k(n, c, k), 4) for k in range(1, n + 1)],
        gate_failed=(
            gate.min_pass_rate is not None and rate is not None and rate < gate.min_pass_rate
        ),
    )


def refresh_pair(entry: PairEntry, gate: PassGate | None = None) -> None:
    """Recompute a pair's headline fields from its runs (in place).

    Without ``gate`` the one recorded on the pair (or the defaults) applies, so a re-score
    keeps the gate the run was made with.
    """
    if gate is None:
        recorded = entry.pass_rates
        gate = PassGate(recorded.pass_score, recorded.min_pass_rate) if recorded else PassGate()
    rep = representative(entry.runs)
    entry.status = pair_status(entry.runs)
    entry.reliability = reliability(entry.runs)
    entry.spread = spread(entry.runs)
    entry.pass_rates = pass_rates(entry.runs, gate)
    entry.intervals = pair_intervals(entry.runs)
    entry.load_warning = load_warning(entry.runs)
    entry.panel = pair_agreement(entry.runs)
    gate_failed = entry.pass_rates is not None and entry.pass_rates.gate_failed
    if gate_failed and entry.status == "completed":
        entry.status = "failed"
    entry.failed = entry.status == "failed"
    head = rep or _latest_finished(entry.runs)
    entry.representative_run_index = rep.run_index if rep else None
    if head is None:
        return
    entry.duration_ms = head.duration_ms
    entry.exit_code = head.exit_code
    entry.error = head.error if rep is None else None
    if gate_failed and entry.pass_rates is not None:
        p = entry.pass_rates
        entry.error = (
            f"pass rate {p.passed}/{p.n} (score ≥ {p.pass_score}) is below "
            f"--min-pass-rate {p.min_pass_rate:g}"
        )
    entry.token_usage = head.token_usage
    entry.total_cost_usd = head.total_cost_usd
    entry.cost_simulated = head.cost_simulated
    entry.score = head.score
    entry.file = f"{head.dir}/{RESULT_FILE}"


def _latest_finished(runs: Sequence[RunEntry]) -> RunEntry | None:
    finished = [r for r in runs if r.status != "cancelled" or r.started_at]
    return max(finished, key=lambda r: r.run_index) if finished else None


def summarize(
    pairs: Sequence[PairEntry],
    skipped: int,
    load_failures: int,
    *,
    statistics_of: Summary | None = None,
) -> Summary:
    """Counts over pairs and runs, and the average of representative composites.

    ``statistics_of``: take the suite-wide statistics (per-agent intervals, the panel's
    agreement) from this earlier summary instead of recomputing them. The writer's
    interim flushes do, since those statistics cost more than the rest of a flush and
    only the final manifest needs them current.
    """
    runs = [r for p in pairs for r in p.runs]
    heads = [
        c
        for p in pairs
        for r in p.runs
        if r.run_index == p.representative_run_index and (c := composite(r)) is not None
    ]
    return Summary(
        total=len(pairs),
        completed=sum(p.status == "completed" for p in pairs),
        failed=sum(p.status == "failed" for p in pairs),
        cancelled=sum(p.status == "cancelled" for p in pairs),
        skipped=skipped,
        runs_total=len(runs),
        runs_completed=sum(r.status == "completed" for r in runs),
        runs_failed=sum(r.status == "failed" for r in runs),
        runs_cancelled=sum(r.status == "cancelled" for r in runs),
        load_failures=load_failures,
        average_axis_score=round(statistics.fmean(heads)) if heads else None,
        spend=spend_of(runs),
        agent_intervals=(
            agent_intervals(pairs) if statistics_of is None else statistics_of.agent_intervals
        ),
        panel=suite_agreement(pairs) if statistics_of is None else statistics_of.panel,
    )


# --- axis reports diff ------------------------------------------------------------------


def noise_band(stdev: float | None) -> float:
    """The tolerance a change must exceed: max(1, 2σ); the floor when σ is unmeasured."""
    return max(1.0, 2 * stdev) if stdev is not None else 1.0


def _dimension_stdev(entry: PairEntry, name: str) -> float | None:
    values: list[float] = []
    for run in entry.runs:
        if composite(run) is None or run.score is None:
            continue
        value = run.score.dimension(name)
        if value is not None:
            values.append(float(value))
    return _stdev(values)


def _headline(entry: PairEntry, name: str) -> int | None:
    score = entry.score
    if score is None or score.withheld or entry.representative_run_index is None:
        return None
    return score.dimension(name)


def diff_pair(a: PairEntry, b: PairEntry) -> PairDiff:
    """The headline deltas of one pair, each judged against report A's noise for that score."""
    deltas: list[ScoreDelta] = []
    for name in SCORES:
        before, after = _headline(a, name), _headline(b, name)
        band = noise_band(_dimension_stdev(a, name))
        delta = None if before is None or after is None else after - before
        deltas.append(
            ScoreDelta(
                name=camel(name),
                a=before,
                b=after,
                delta=delta,
                noise=round(band, 2),
                changed=delta is not None and abs(delta) > band,
                interval=welch_interval(scored_values(a.runs, name), scored_values(b.runs, name)),
            )
        )
    head = deltas[0]
    measured = _dimension_stdev(a, "axis_score") is not None
    if head.delta is None:
        verdict = "unscored"
    elif not any(d.changed for d in deltas):
        verdict = "unchanged"
    elif not measured:
        verdict = "unmeasured"  # beyond the floor of 1, but nobody measured the noise
    elif not head.changed:
        verdict = "mixed"
    else:
        verdict = "improved" if head.delta > 0 else "regressed"
    return PairDiff(
        scenario_key=a.scenario_key,
        agent_name=a.agent_name,
        verdict=verdict,
        runs_a=a.run_count,
        runs_b=b.run_count,
        noise_measured=measured,
        deltas=deltas,
        reliability_a=a.reliability,
        reliability_b=b.reliability,
    )


def diff_reports(a: ReportManifest, b: ReportManifest) -> ReportDiff:
    """Per-pair deltas from A to B: pairs in both, then new (only B), then vanished (only A)."""
    left = {(p.scenario_key, p.agent_name): p for p in a.results}
    right = {(p.scenario_key, p.agent_name): p for p in b.results}
    pairs = [diff_pair(p, right[k]) for k, p in left.items() if k in right]
    pairs += [_one_sided(p, "new") for k, p in right.items() if k not in left]
    pairs += [_one_sided(p, "vanished") for k, p in left.items() if k not in right]
    return ReportDiff(
        report_a=a.report_id,
        report_b=b.report_id,
        pairs=pairs,
        paired=paired_test(paired_deltas(a, b)),
    )


def _one_sided(pair: PairEntry, verdict: Literal["new", "vanished"]) -> PairDiff:
    """A pair only in B (``new``) or only in A (``vanished``): its runs on its own side."""
    new = verdict == "new"
    return PairDiff(
        scenario_key=pair.scenario_key,
        agent_name=pair.agent_name,
        verdict=verdict,
        runs_a=0 if new else pair.run_count,
        runs_b=pair.run_count if new else 0,
        reliability_a=None if new else pair.reliability,
        reliability_b=pair.reliability if new else None,
    )
