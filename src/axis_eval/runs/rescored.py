"""Store the result of ``axis score``: new scores into each run's files and the manifest."""

from __future__ import annotations

from pathlib import Path

from axis_eval.report.judge_noise_models import JudgeNoise
from axis_eval.report.models import PairEntry, ReportManifest
from axis_eval.runs.aggregate import refresh_pair, summarize
from axis_eval.runs.judge_noise import judge_noise
from axis_eval.runs.run_folder import store_score
from axis_eval.runs.store import ReportStore, read_manifest
from axis_eval.scoring.models import ScoreResult
from axis_eval.scoring.rescore import RescoredRun, RescoreResult


def save_rescore(report_dir: Path, result: RescoreResult) -> ReportManifest:
    """Write every new score (``verdicts.json``, ``result.json``) and then the manifest.

    With ``--rejudge`` each pair gets ``judgeNoise`` (:mod:`axis_eval.runs.judge_noise`);
    a re-score without it drops a pair's earlier ``judgeNoise``, which described grades
    that may since have changed (new weights, calibration or judge).
    """
    store = ReportStore(report_dir)
    manifest = read_manifest(report_dir)
    by_run = {(r.scenario_key, r.agent_name, r.run_index): r for r in result.runs}
    for pair in manifest.results:
        news: dict[int, RescoredRun] = {}
        for run in pair.runs:
            new = by_run.get((pair.scenario_key, pair.agent_name, run.run_index))
            if new is None or new.score is None:
                continue
            news[run.run_index] = new
            store_score(store, run, new.score, new.verdicts, new.sparse_index)
        refresh_pair(pair)
        pair.judge_noise = _pair_noise(pair, news, result.rejudge) if result.rejudge else None
    s = manifest.summary
    manifest.summary = summarize(manifest.results, s.skipped, s.load_failures)
    store.write_manifest(manifest, durable=True)
    return manifest


def _pair_noise(pair: PairEntry, news: dict[int, RescoredRun], rejudge: int) -> JudgeNoise | None:
    stored: dict[int, ScoreResult | None] = {
        r.run_index: r.score for r in pair.runs if r.status == "completed" and not r.failed
    }
    rejudged = {i: n.rejudged for i, n in news.items() if n.rejudged}
    spends = [s for n in news.values() for s in n.rejudge_spend]
    label = None
    if spends:
        first = spends[0]
        label = f"{first.judge}:{first.model}" if first.kind == "api" else first.judge
    simulated = bool(spends) and all(s.cost_simulated for s in spends)
    return judge_noise(stored, rejudged, rejudge=rejudge, judge=label, simulated=simulated)
