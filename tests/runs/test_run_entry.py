"""The one constructor from a job's outcome to the report's run entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import JobSpec
from axis_eval.progress import JobView
from axis_eval.report.models import ArtifactEntry, RunEntry
from axis_eval.runs import run_entry
from axis_eval.scoring.models import ScoreResult
from axis_eval.transcript.models import Transcript
from helpers.factories import withheld


def a_job(tmp_path: Path, make_project: Any, runs: int = 1) -> JobSpec:
    scenarios = {"s": {"name": "S", "prompt": "p", "judge": "j", "runs": runs}}
    make_project(tmp_path, {"agents": ["codex"]}, scenarios)
    return plan(load_config(str(tmp_path)), Selection()).jobs[-1]


def full_outcome(job: JobSpec) -> JobOutcome:
    """An outcome with every field the entry takes set to something other than its default."""
    transcript = Transcript(
        agent="codex",
        usage=TokenUsage(input=10, output=5, cache_read_input=2),
        cost_usd=0.25,
        cost_estimated=True,
        agent_version="1.2.3",
    )
    return JobOutcome(
        spec=job,
        status="failed",
        failed=True,
        exit_code=3,
        error="boom",
        error_kind="agent",
        started_at="2026-01-01T00:00:00.000Z",
        ended_at="2026-01-01T00:00:02.000Z",
        duration_ms=2000,
        transcript=transcript,
        result="the answer",
        setup_output="setup notes",
        teardown_output="teardown notes",
        score=withheld("judge down"),
        warnings=["odd line"],
    )


def test_every_field_of_the_entry_comes_from_the_outcome(tmp_path: Path, make_project: Any) -> None:
    job = a_job(tmp_path, make_project, runs=3)
    outcome = full_outcome(job)
    artifact = ArtifactEntry(path="out.txt", size_bytes=2, mime_type="text/plain", file="d/out.txt")
    entry = run_entry.from_outcome(outcome, dir="d", artifacts=[artifact])
    # A field added to RunEntry must be mapped here, not left to its default by accident.
    assert entry.model_fields_set == set(RunEntry.model_fields)
    assert entry.run_index == job.run_index == 3
    shared = set(JobOutcome.model_fields) & set(RunEntry.model_fields)
    # Every name the two shapes share is copied as it is, but the two the report reshapes.
    assert shared == {*run_entry.SAME_IN_BOTH, "artifacts", "score"}
    for name in shared - {"artifacts"}:
        assert getattr(entry, name) == getattr(outcome, name), name
    assert entry.artifacts == [artifact] and entry.dir == "d"
    assert outcome.transcript is not None
    assert entry.token_usage == outcome.transcript.usage
    costs = (entry.total_cost_usd, entry.cost_estimated, entry.agent_version)
    assert costs == (0.25, True, "1.2.3")


def test_an_outcome_without_transcript_has_no_usage(tmp_path: Path, make_project: Any) -> None:
    job = a_job(tmp_path, make_project)
    entry = run_entry.from_outcome(JobOutcome(spec=job, status="cancelled", failed=False), dir="d")
    assert entry.token_usage is None and entry.total_cost_usd is None
    assert not entry.cost_estimated and entry.agent_version is None and entry.artifacts == []


def test_a_plain_dict_score_is_typed(tmp_path: Path, make_project: Any) -> None:
    job = a_job(tmp_path, make_project)
    outcome = JobOutcome(spec=job, status="completed", failed=False)
    outcome.score = {"withheld": True, "withheldReason": "down"}  # type: ignore[assignment]  # a custom scorer's dict
    entry = run_entry.from_outcome(outcome, dir="d")
    assert isinstance(entry.score, ScoreResult) and entry.score.withheld


def test_the_display_sees_the_same_run_in_either_shape(tmp_path: Path, make_project: Any) -> None:
    outcome = full_outcome(a_job(tmp_path, make_project))
    entry = run_entry.from_outcome(outcome, dir="d")

    def seen(view: JobView) -> tuple[Any, ...]:
        return (view.status, view.error, view.duration_ms, view.tokens, view.score)

    assert seen(entry) == seen(outcome)
    assert entry.tokens == 17
    assert "tokens" not in entry.model_dump(by_alias=True)  # a view, never in report.json


def test_a_planned_job_starts_as_not_started(tmp_path: Path, make_project: Any) -> None:
    job = a_job(tmp_path, make_project, runs=3)
    entry = run_entry.not_started(job)
    assert (entry.status, entry.failed, entry.error) == ("cancelled", False, "not started")
    assert entry.run_index == 3 and entry.dir.endswith("run-3")
