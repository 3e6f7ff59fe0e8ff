"""Terminal renderings: the dry run, the report list and a report's detail."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from axis_eval.config.load import load_config
from axis_eval.planning.matrix import Selection, plan
from axis_eval.report.models import PairEntry, ReportManifest, RunEntry, Summary, ToolInfo
from axis_eval.report.render import (
    dry_run_json,
    render_dry_run,
    render_report_detail,
    render_report_list,
)

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
    assert lines[2].split() == ["#", "run", "scenario", "agent", "time", "tokens"]
    assert [line.split() for line in lines[4:7]] == [
        ["1", "1/3", "a", "codex", "1.5m", "1,234,567"],
        ["2", "2/3", "a", "codex", "1.5m", "1,234,567"],
        ["3", "3/3", "a", "codex", "1.5m", "1,234,567"],
    ]
    assert "Skipped (1): off" in text
    assert "Failed to load (1):" in text and "  scenarios/bad.json: " in text
    data = dry_run_json(p)
    assert data["statusLine"] == p.status_line and data["pairs"] == 1
    assert [j["number"] for j in data["jobs"]] == [1, 2, 3]
    assert data["skipped"] == ["off"]
    assert data["loadFailures"][0]["path"] == "scenarios/bad.json"


def report(report_id: str, **fields: Any) -> ReportManifest:
    return ReportManifest(
        tool=ToolInfo(version="1"),
        report_id=report_id,
        started_at="2026-01-01T00:00:00Z",
        timestamp="2026-01-01T00:01:00Z",
        config_path="/p/c.json",
        config_dir="/p",
        summary=Summary(total=2, completed=1, failed=1, runs_total=4, runs_failed=2),
        duration_ms=61_000,
        **fields,
    )


def entry(key: str, status: str, error: str | None = None) -> PairEntry:
    base, _, variant = key.partition("@")
    return PairEntry(
        scenario_key=key,
        base_key=base,
        variant=variant or None,
        scenario_name=key,
        agent_name="codex",
        agent="codex",
        status=status,
        failed=status == "failed",  # type: ignore[arg-type]
        run_count=1,
        dir="d",
        prompt="p",
        judge="j",
        agent_config={},
        resolved_config={},
        error=error,
        runs=[
            RunEntry(
                run_index=1,
                status=status,
                failed=status == "failed",  # type: ignore[arg-type]
                dir="d",
            )
        ],
    )


def test_report_list() -> None:
    assert render_report_list([], 10) == "No reports found. Run `axis run` to generate one."
    text = render_report_list([report("r3"), report("r2"), report("r1")], 2)
    assert "AXIS Reports" in text
    assert "r3" in text and "r2" in text and "r1" not in text
    assert "... and 1 more" in text
    assert "1m01s" in text


def test_report_detail() -> None:
    m = report(
        "r1",
        name="Nightly",
        results=[entry("a@v", "completed"), entry("b", "failed", "boom\nsecond line")],
        load_failures=[],
    )
    text = render_report_detail(m)
    assert text.startswith("AXIS Report: r1 (Nightly)")
    assert "1 completed, 1 failed (2 total)" in text
    assert "4 total, 2 failed" in text
    assert "codex @v" in text
    assert "✓ pass" in text and "✗ fail" in text
    assert "    ↳ boom" in text and "second line" not in text
