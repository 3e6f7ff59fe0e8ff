"""The baseline tests' notation for reports: pairs of runs given as composites, on disk or not.

The objects come from ``helpers.factories``; this module only reads a run written as ``80``,
``"fail"`` or ``"withheld"`` and lays the runs out the way ``axis run`` does.
"""

from __future__ import annotations

from pathlib import Path

from axis_eval.report.models import PairEntry, ReportManifest, RunEntry
from axis_eval.runs.store import ReportStore, reports_root
from helpers.factories import manifest, pair as make_pair, run_entry

Run = int | str
"""A composite, ``"fail"`` (the run failed) or ``"withheld"`` (the judge failed)."""


def baseline_run(index: int, value: Run, count: int) -> RunEntry:
    """Run ``index`` of ``count`` in its ``axis run`` folder (flat for a single run)."""
    folder = "scenarios/s/a" if count == 1 else f"scenarios/s/a/run-{index}"
    if value == "fail":
        return run_entry(index, status="failed", error="boom", dir=folder)
    if value == "withheld":
        return run_entry(index, "withheld", dir=folder)
    assert isinstance(value, int)
    return run_entry(index, value, duration_ms=1000 * index, dir=folder)


def pair(scenario: str, agent: str, *runs: Run) -> PairEntry:
    count = len(runs)
    made = [baseline_run(i, v, count) for i, v in enumerate(runs, start=1)]
    return make_pair(*made, scenario=scenario, agent=agent)


def report(report_id: str, *pairs: PairEntry, config_dir: str = ".") -> ReportManifest:
    """A finished report whose times follow from its id (ids sort as the times do)."""
    return manifest(
        *pairs,
        report_id=report_id,
        state="finished",
        started_at=f"{report_id}T00:00:00.000Z",
        timestamp=f"{report_id}T00:10:00.000Z",
        config_dir=config_dir,
    )


def save(root: Path, manifest: ReportManifest) -> ReportManifest:
    """Write ``manifest`` as a report under ``root/.axis/reports``."""
    store = ReportStore(reports_root(root) / manifest.report_id)
    store.folder.mkdir(parents=True, exist_ok=True)
    store.write_manifest(manifest)
    return manifest
