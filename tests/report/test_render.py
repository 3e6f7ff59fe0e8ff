"""Terminal renderings: the dry run, the report list and a report's detail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from axis_eval._types import JobStatus
from axis_eval.config.load import load_config
from axis_eval.planning.matrix import Selection, plan
from axis_eval.report.models import PairEntry, Summary
from axis_eval.report.render import (
    dry_run_json,
    render_dry_run,
    render_report_detail,
    render_report_list,
)
from helpers.factories import manifest, pair, run_entry

MakeProject = Callable[..., Path]


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


def test_dry_run_rendering(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {
            "a": sc(limits={"time_minutes": 1.5, "tokens": 1234567}),
            "off": sc(skip=True),
            "bad": {"name": "b", "judge": "j"},
        },
    )
    p = plan(load_config(str(tmp_path)), Selection(runs=3))
    text = render_dry_run(p)
    lines = text.splitlines()
    assert lines[0] == p.status_line
    assert lines[2].split() == ["#", "run", "scenario", "agent", "time", "tokens", "sandbox"]
    assert [line.split() for line in lines[4:7]] == [
        ["1", "1/3", "a", "codex", "1.5m", "1,234,567", "auto"],
        ["2", "2/3", "a", "codex", "1.5m", "1,234,567", "auto"],
        ["3", "3/3", "a", "codex", "1.5m", "1,234,567", "auto"],
    ]
    assert "Skipped (1): off" in text
    assert "Failed to load (1):" in text and "  scenarios/bad.json: " in text
    data = dry_run_json(p)
    assert data["statusLine"] == p.status_line and data["pairs"] == 1
    assert [j["number"] for j in data["jobs"]] == [1, 2, 3]
    assert data["skipped"] == ["off"]
    assert data["loadFailures"][0]["path"] == "scenarios/bad.json"


def entry(key: str, status: JobStatus, error: str | None = None) -> PairEntry:
    """A one-run pair shown as recorded (not refreshed, so ``error`` stays the headline)."""
    run = run_entry(1, status=status)
    return pair(run, scenario=key, refresh=False, status=status, failed=run.failed, error=error)


def test_report_list() -> None:
    assert render_report_list([], 10) == "No reports found. Run `axis run` to generate one."
    reports = [manifest(report_id=i, duration_ms=61_000) for i in ("r3", "r2", "r1")]
    text = render_report_list(reports, 2)
    assert "AXIS Reports" in text
    assert "r3" in text and "r2" in text and "r1" not in text
    assert "... and 1 more" in text
    assert "1m01s" in text


def test_report_detail() -> None:
    m = manifest(
        entry("a@v", "completed"),
        entry("b", "failed", "boom\nsecond line"),
        report_id="r1",
        name="Nightly",
        summary=Summary(total=2, completed=1, failed=1, runs_total=4, runs_failed=2),
    )
    text = render_report_detail(m)
    assert text.startswith("AXIS Report: r1 (Nightly)")
    assert "1 completed, 1 failed (2 total)" in text
    assert "4 total, 2 failed" in text
    assert "codex @v" in text
    assert "✓ pass" in text and "✗ fail" in text
    assert "    ↳ boom" in text and "second line" not in text
