"""The one place a job's outcome becomes the report's run entry.

A job returns a :class:`JobOutcome` (the execution stage's shape: spec, transcript, raw
output, collected files); the report keeps a :class:`RunEntry` (what ``report.json`` and
``result.json`` say about the run). Every entry is built here, so the mapping between the
two is written once: a field added to both is added here and nowhere else.
"""

from __future__ import annotations

from typing import Any

from axis_eval.execute.models import JobOutcome
from axis_eval.planning.models import JobSpec
from axis_eval.report.models import ArtifactEntry, RunEntry
from axis_eval.runs.store import run_dir
from axis_eval.scoring.models import ScoreResult

SAME_IN_BOTH = (
    "status",
    "failed",
    "exit_code",
    "error",
    "error_kind",
    "started_at",
    "ended_at",
    "duration_ms",
    "result",
    "setup_output",
    "teardown_output",
    "warnings",
    "sandbox",
    "worker",
    "machine",
    "attempts",
)
"""The fields a run entry takes from the outcome as they are: same name, same meaning."""


def from_outcome(
    outcome: JobOutcome, *, dir: str, artifacts: list[ArtifactEntry] | None = None
) -> RunEntry:
    """The run entry of a finished job.

    Args:
        outcome: what the job returned.
        dir: the run's folder, relative to the report folder.
        artifacts: the collected files as saved in that folder (the caller writes them:
            only it knows where the store puts them).
    """
    transcript = outcome.transcript
    simulated = bool(transcript and transcript.cost_simulated)
    return RunEntry(
        **{name: getattr(outcome, name) for name in SAME_IN_BOTH},
        run_index=outcome.spec.run_index,
        dir=dir,
        artifacts=artifacts or [],
        score=_typed_score(outcome.score),
        # What the transcript knows about the run's spend and the agent.
        token_usage=transcript.usage if transcript else None,
        # Simulated usage (the scripted model server) never reads as money spent.
        total_cost_usd=transcript.cost_usd if transcript and not simulated else None,
        cost_estimated=bool(transcript and transcript.cost_estimated and not simulated),
        cost_simulated=simulated,
        agent_version=transcript.agent_version if transcript else None,
        # A job that started was placed by an executor: a Dask worker's, or this process.
        executor=None if outcome.started_at is None else "dask" if outcome.worker else "local",
    )


def not_started(job: JobSpec, *, dir: str | None = None) -> RunEntry:
    """The placeholder a planned job has until it finishes: a report read mid-run (or
    after a kill) says exactly which jobs never ran.

    ``dir``: the run's folder (default: a new report's, from :func:`run_dir`; a resumed
    report's pair keeps the folder it has).
    """
    return RunEntry(
        run_index=job.run_index,
        status="cancelled",
        failed=False,
        error="not started",
        dir=dir or run_dir(*job.pair_key, job.run_index, job.run_count),
    )


def _typed_score(score: ScoreResult | dict[str, Any] | None) -> ScoreResult | None:
    """The typed score (a custom scorer may still hand over a plain dict)."""
    if score is None or isinstance(score, ScoreResult):
        return score
    return ScoreResult.model_validate(score)
