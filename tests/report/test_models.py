"""The report shapes: camelCase on disk, strict, round-trippable; the exit code from a report."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from axis_eval._types import TokenUsage
from axis_eval.errors import EXIT_FAILED, EXIT_OK
from axis_eval.report.models import (
    SCHEMA_VERSION,
    ReportManifest,
    RunEntry,
    Summary,
    ToolInfo,
)
from axis_eval.report.outcome import exit_code_for
from helpers.factories import manifest, pair, run_entry


def report(**summary: int) -> ReportManifest:
    return manifest(tool=ToolInfo(version="1"), summary=Summary(**summary))


def test_manifest_serializes_camel_case() -> None:
    data = json.loads(report(total=1, runs_total=3).model_dump_json())
    assert data["schemaVersion"] == SCHEMA_VERSION
    assert data["reportId"] == "r"
    assert data["summary"]["runsTotal"] == 3
    assert "runs_total" not in data["summary"]
    assert data["tool"] == {"name": "axis-eval", "version": "1"}


def test_manifest_round_trips() -> None:
    m = report(total=2, completed=1, failed=1)
    usage = TokenUsage(input=1, output=2, cache_read_input=3)
    run = run_entry(1, status="failed", exit_code=1, dir="d", token_usage=usage)
    judge = [{"check": "c", "weight": 1.0}]
    m.results.append(pair(run, scenario="a@v", scenario_name="A", judge=judge))
    assert m.results[0].status == "failed" and m.results[0].failed
    again = ReportManifest.model_validate_json(m.model_dump_json())
    assert again == m
    entry = json.loads(m.model_dump_json())["results"][0]
    assert entry["scenarioKey"] == "a@v" and entry["runs"][0]["runIndex"] == 1
    assert entry["runs"][0]["tokenUsage"]["cacheReadInput"] == 3


def test_token_total_counts_cache_reads() -> None:
    usage = TokenUsage(input=1, output=2, cache_read_input=3, cache_write_input=100)
    assert usage.total == 6
    assert (usage + usage).total == 12


def test_manifest_rejects_unknown_fields() -> None:
    data = json.loads(report().model_dump_json())
    data["surprise"] = 1
    with pytest.raises(ValidationError):
        ReportManifest.model_validate(data)


def test_job_status_is_one_of_three() -> None:
    with pytest.raises(ValidationError):
        RunEntry(run_index=1, status="skipped", failed=False, dir="d")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("summary", "code"),
    [
        ({"total": 2, "completed": 2}, EXIT_OK),
        ({"total": 2, "completed": 1, "failed": 1}, EXIT_FAILED),
        ({"total": 1, "completed": 1, "load_failures": 1}, EXIT_FAILED),
        ({"total": 3, "completed": 3, "runs_total": 9, "runs_failed": 4}, EXIT_OK),
    ],
)
def test_exit_code_for(summary: dict[str, int], code: int) -> None:
    assert exit_code_for(report(**summary)) == code


def test_runs_the_infrastructure_cancelled_fail_the_run() -> None:
    """A lost Dask cluster cancels its running jobs; nobody asked for that: exit 1 (a
    cancel by Ctrl-C is the caller's, 130)."""
    lost = run_entry(1, status="cancelled", error_kind="infrastructure", dir="d")
    asked = run_entry(1, status="cancelled", error_kind="cancelled", dir="d")
    for run, code in ((lost, EXIT_FAILED), (asked, EXIT_OK)):
        m = report(total=1, cancelled=1)
        m.results.append(pair(run))
        assert exit_code_for(m) == code
