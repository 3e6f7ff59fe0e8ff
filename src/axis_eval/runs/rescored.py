"""Store the result of ``axis score``: new scores into each run's files and the manifest."""

from __future__ import annotations

from pathlib import Path

from axis_eval.report.models import ReportManifest
from axis_eval.runs.aggregate import refresh_pair, summarize
from axis_eval.runs.run_folder import store_score
from axis_eval.runs.store import ReportStore, read_manifest
from axis_eval.scoring.rescore import RescoreResult


def save_rescore(report_dir: Path, result: RescoreResult) -> ReportManifest:
    """Write every new score (``verdicts.json``, ``result.json``) and then the manifest."""
    store = ReportStore(report_dir)
    manifest = read_manifest(report_dir)
    by_run = {(r.scenario_key, r.agent_name, r.run_index): r for r in result.runs}
    for pair in manifest.results:
        for run in pair.runs:
            new = by_run.get((pair.scenario_key, pair.agent_name, run.run_index))
            if new is None or new.score is None:
                continue
            store_score(store, run, new.score, new.verdicts, new.sparse_index)
        refresh_pair(pair)
    s = manifest.summary
    manifest.summary = summarize(manifest.results, s.skipped, s.load_failures)
    store.write_manifest(manifest, durable=True)
    return manifest
