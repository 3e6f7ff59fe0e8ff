"""``axis reports``: list, show one, ``latest``, ``--json``, unknown ids."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import plan
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter

MakeProject = Callable[..., Path]
Axis = Callable[..., Any]
SAME_SECOND = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


def write_report(root: Path, *, fail: str | None = None) -> str:
    """Plan the project at ``root`` and record every job; ``fail`` names a scenario to fail."""
    loaded = load_config(str(root))
    the_plan = plan(loaded)
    reports = reports_root(loaded.config_dir)
    store = ReportStore(reports / new_report_id(reports, SAME_SECOND))
    writer = ReportWriter(store, the_plan, loaded)
    for job in the_plan.jobs:
        failed = job.scenario.key == fail
        writer.record(
            JobOutcome(
                spec=job,
                status="failed" if failed else "completed",
                failed=failed,
                exit_code=1 if failed else 0,
                error="agent exited with code 1" if failed else None,
                result=None if failed else "done",
                duration_ms=1500,
            )
        )
    writer.finish("finished", 1 if fail else 0)
    return store.report_id


@pytest.fixture
def project(tmp_path: Path, make_project: MakeProject) -> Path:
    return make_project(tmp_path, {"agents": ["codex", "goose"]}, {"a": sc(), "b": sc()})


def test_no_reports(project: Path, axis: Axis) -> None:
    result = axis("reports", cwd=project)
    assert result.exit_code == 0
    assert result.stdout.strip() == "No reports found. Run `axis run` to generate one."


def test_no_reports_json(project: Path, axis: Axis) -> None:
    result = axis("reports", "--json", cwd=project)
    assert result.exit_code == 0 and json.loads(result.stdout) == []


def test_latest_without_reports_exits_1(project: Path, axis: Axis) -> None:
    result = axis("reports", "latest", cwd=project)
    assert result.exit_code == 1
    assert "no reports found" in result.stderr


def test_reports_in_the_same_second_get_unique_ids(project: Path) -> None:
    first = write_report(project)
    second = write_report(project)
    assert first == "2026-05-06-070809"
    assert second == "2026-05-06-070809-2"


def test_list_show_latest_and_json(project: Path, axis: Axis) -> None:
    first = write_report(project)
    second = write_report(project, fail="b")
    listing = axis("reports", cwd=project)
    assert listing.exit_code == 0
    lines = listing.stdout.splitlines()
    assert lines[0] == "AXIS Reports"
    rows = [line.split() for line in lines[4:]]
    assert [r[0] for r in rows] == [second, first], "newest first"
    assert rows[0][1:6] == ["finished", "4", "-", "2", "2"]
    assert rows[1][1:6] == ["finished", "4", "-", "4", "0"]

    limited = axis("reports", "-n", "1", cwd=project)
    limited_ids = [line.split()[0] for line in limited.stdout.splitlines()[4:]]
    assert limited_ids == [second, "..."]
    assert limited.stdout.rstrip().endswith("... and 1 more")

    detail = axis("reports", first, cwd=project)
    assert detail.exit_code == 0
    assert detail.stdout.startswith(f"AXIS Report: {first}")
    assert "4 completed (4 total)" in detail.stdout

    latest = axis("reports", "latest", cwd=project)
    assert latest.exit_code == 0
    assert latest.stdout.startswith(f"AXIS Report: {second}")
    assert "2 completed, 2 failed (4 total)" in latest.stdout
    assert "↳ agent exited with code 1" in latest.stdout

    as_json = axis("reports", second, "--json", cwd=project)
    assert as_json.exit_code == 0
    data = json.loads(as_json.stdout)
    assert data["reportId"] == second and data["state"] == "finished" and data["exitCode"] == 1
    assert data["summary"]["failed"] == 2 and data["summary"]["runsTotal"] == 4
    assert [(r["scenarioKey"], r["agentName"], r["failed"]) for r in data["results"]] == [
        ("a", "codex", False),
        ("b", "codex", True),
        ("a", "goose", False),
        ("b", "goose", True),
    ]

    listed = json.loads(axis("reports", "--json", cwd=project).stdout)
    assert [m["reportId"] for m in listed] == [second, first]


def test_unknown_report_id_exits_1(project: Path, axis: Axis) -> None:
    write_report(project)
    result = axis("reports", "2000-01-01-000000", cwd=project)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: report '2000-01-01-000000' not found")


def test_reports_with_c_points_at_the_project(
    project: Path, tmp_path_factory: pytest.TempPathFactory, axis: Axis
) -> None:
    rid = write_report(project)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    result = axis("reports", "-c", str(project), cwd=elsewhere)
    assert result.exit_code == 0 and rid in result.stdout


def test_unknown_report_id_process(project: Path, axis_process: Axis) -> None:
    write_report(project)
    result = axis_process("reports", "nope", cwd=project)
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    assert "report 'nope' not found" in result.stderr
