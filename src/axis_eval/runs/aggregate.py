"""From runs to pairs: the representative run, pair status, reliability and the summary."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from axis_eval.report.models import JobStatus, PairEntry, Reliability, RunEntry, Summary


def composite(run: RunEntry) -> float | None:
    """A run's composite score, when it completed, was scored and was not withheld."""
    score = run.score
    if run.status != "completed" or score is None or score.withheld:
        return None
    return None if score.axis_score is None else float(score.axis_score)


def representative(runs: Sequence[RunEntry]) -> RunEntry | None:
    """The successful run whose composite is nearest the median; ties to the lowest index.

    Without scores (``--no-score``, or every score withheld) it is the lowest-index
    completed run. Failed and cancelled runs are never candidates, and neither are runs
    whose score was withheld while others have one.
    """
    scored = [(r, c) for r in runs if (c := composite(r)) is not None]
    if scored:
        median = statistics.median(c for _, c in scored)
        return min(scored, key=lambda rc: (abs(rc[1] - median), rc[0].run_index))[0]
    completed = [r for r in runs if r.status == "completed"]
    return min(completed, key=lambda r: r.run_index) if completed else None


def pair_status(runs: Sequence[RunEntry]) -> JobStatus:
    """Completed when any run succeeded; failed when every run finished without success."""
    if any(r.status == "completed" for r in runs):
        return "completed"
    if any(r.status == "cancelled" for r in runs):
        return "cancelled"
    return "failed"


def reliability(runs: Sequence[RunEntry]) -> Reliability:
    """Succeeded / total, where withheld scores leave the denominator."""
    withheld = sum(1 for r in runs if r.score is not None and r.score.withheld)
    finished = [r for r in runs if r.status != "cancelled"]
    succeeded = sum(1 for r in finished if r.status == "completed") - withheld
    return Reliability(
        succeeded=max(0, succeeded), total=len(finished) - withheld, withheld=withheld
    )


def refresh_pair(entry: PairEntry) -> None:
    """Recompute a pair's headline fields from its runs (in place)."""
    rep = representative(entry.runs)
    entry.status = pair_status(entry.runs)
    entry.failed = entry.status == "failed"
    entry.reliability = reliability(entry.runs)
    head = rep or _latest_finished(entry.runs)
    entry.representative_run_index = rep.run_index if rep else None
    if head is None:
        return
    entry.duration_ms = head.duration_ms
    entry.exit_code = head.exit_code
    entry.error = head.error if rep is None else None
    entry.token_usage = head.token_usage
    entry.total_cost_usd = head.total_cost_usd
    entry.score = head.score
    entry.file = f"{head.dir}/result.json"


def _latest_finished(runs: Sequence[RunEntry]) -> RunEntry | None:
    finished = [r for r in runs if r.status != "cancelled" or r.started_at]
    return max(finished, key=lambda r: r.run_index) if finished else None


def summarize(pairs: Sequence[PairEntry], skipped: int, load_failures: int) -> Summary:
    """Counts over pairs and runs, and the average of representative composites."""
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
    )
