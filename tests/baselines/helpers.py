"""Hand-made reports for the baseline tests: pairs of runs with composites, on disk or not."""

from __future__ import annotations

from pathlib import Path

from axis_eval.report.models import PairEntry, ReportManifest, RunEntry, Summary, ToolInfo
from axis_eval.runs.aggregate import refresh_pair
from axis_eval.runs.store import ReportStore, reports_root
from axis_eval.scoring.models import ScoreResult

Run = int | str
"""A composite, ``"fail"`` (the run failed) or ``"withheld"`` (the judge failed)."""


def score(value: int, **dims: int) -> ScoreResult:
    base = {"goal_achievement": value, "environment": value, "service": value, "agent": value}
    return ScoreResult(axis_score=value, **{**base, **dims})


def run_entry(index: int, value: Run, count: int) -> RunEntry:
    folder = "scenarios/s/a" if count == 1 else f"scenarios/s/a/run-{index}"
    if value == "fail":
        return RunEntry(run_index=index, status="failed", failed=True, error="boom", dir=folder)
    if value == "withheld":
        withheld = ScoreResult(withheld=True, withheld_reason="judge failed")
        return RunEntry(
            run_index=index, status="completed", failed=False, score=withheld, dir=folder
        )
    assert isinstance(value, int)
    return RunEntry(
        run_index=index,
        status="completed",
        failed=False,
        duration_ms=1000 * index,
        score=score(value),
        dir=folder,
    )


def pair(scenario: str, agent: str, *runs: Run) -> PairEntry:
    entry = PairEntry(
        scenario_key=scenario,
        base_key=scenario,
        scenario_name=scenario,
        agent_name=agent,
        agent=agent,
        status="cancelled",
        failed=False,
        run_count=len(runs),
        dir=f"scenarios/{scenario}/{agent}",
        prompt="do it",
        judge="done",
        agent_config={},
        resolved_config={},
        runs=[run_entry(i, v, len(runs)) for i, v in enumerate(runs, start=1)],
    )
    refresh_pair(entry)
    return entry


def report(report_id: str, *pairs: PairEntry, config_dir: str = ".") -> ReportManifest:
    return ReportManifest(
        tool=ToolInfo(version="test"),
        report_id=report_id,
        state="finished",
        started_at=f"{report_id}T00:00:00.000Z",
        timestamp=f"{report_id}T00:10:00.000Z",
        config_path=f"{config_dir}/axis.config.json",
        config_dir=config_dir,
        summary=Summary(total=len(pairs)),
        results=list(pairs),
    )


def save(root: Path, manifest: ReportManifest) -> ReportManifest:
    """Write ``manifest`` as a report under ``root/.axis/reports``."""
    store = ReportStore(reports_root(root) / manifest.report_id)
    store.folder.mkdir(parents=True, exist_ok=True)
    store.write_manifest(manifest)
    return manifest
