"""Keep a report folder current while a run is under way.

The manifest is written before the first job starts (every run ``cancelled``: not yet
finished) and again after each outcome is saved, so a run killed at any moment leaves a
readable report that says exactly which jobs finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from axis_eval._types import ReportState
from axis_eval._util.clock import now_iso
from axis_eval._version import __version__
from axis_eval.config.models import LoadedConfig, weights_of
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.models import JobSpec, Plan
from axis_eval.redact import mask_mcp
from axis_eval.report.models import (
    LoadFailureEntry,
    PairEntry,
    ReportManifest,
    RunEntry,
    ToolInfo,
)
from axis_eval.runs import run_entry
from axis_eval.runs.aggregate import PassGate, refresh_pair, summarize
from axis_eval.runs.folder_names import legacy_pair_dir
from axis_eval.runs.manifest_text import ManifestText
from axis_eval.runs.run_folder import read_saved_run, save_run, store_score
from axis_eval.runs.store import ReportStore, pair_dir, run_in
from axis_eval.scoring.models import JudgeVerdicts, ScoreResult
from axis_eval.transcript.sparse_index import SparseIndex


def _load_failures(plan: Plan) -> list[LoadFailureEntry]:
    return [LoadFailureEntry(path=f.path, key=f.key, error=f.error) for f in plan.load_failures]


def _resolved(spec: JobSpec) -> dict[str, Any]:
    limits = {"timeMinutes": spec.time_limit_s / 60, "tokens": spec.token_limit}
    return {
        "limits": limits,
        "skills": spec.skills,
        "setup": [a.model_dump(mode="json") for a in spec.scenario.setup],
        "teardown": [a.model_dump(mode="json") for a in spec.scenario.teardown],
        "mcpServers": mask_mcp({k: v.model_dump(mode="json") for k, v in spec.mcp_servers.items()}),
        "artifacts": spec.artifacts,
        "env": spec.env_pass + sorted(spec.env_set),
        "runCount": spec.run_count,
    }


class ReportWriter:
    """Owns ``report.json`` for one run."""

    def __init__(
        self,
        store: ReportStore,
        plan: Plan,
        loaded: LoadedConfig,
        *,
        flush_interval_s: float = 0.5,
        gate: PassGate | None = None,
        previous: ReportManifest | None = None,
        sparse_index: bool = True,
    ) -> None:
        """Start a report; with ``previous`` (``--resume``), continue that report instead.

        A resumed report keeps every finished run (from its ``result.json`` when the last
        manifest write did not see it yet); :attr:`pending` lists the jobs left to run.
        """
        self.store = store
        self.sparse_index = sparse_index
        """Write each run's ``sparse-index.txt`` (off for ``--no-score``: as in AXIS, it is
        the scorer's file; :func:`store_score` writes it when such a run is scored later)."""
        self.gate = gate or PassGate()
        """``--pass-score`` / ``--min-pass-rate``: recorded on every pair's ``passRates``."""
        self._t0 = time.monotonic()
        self._flush_interval_s = flush_interval_s
        self._last_flush = float("-inf")
        self._offset_ms = 0
        self._pairs: dict[tuple[str, str], PairEntry] = {}
        self._text = ManifestText()
        self.pending: list[JobSpec] = list(plan.jobs)
        """The jobs this run must execute (all of them, unless resumed)."""
        self.kept: list[tuple[JobSpec, RunEntry]] = []
        """Resumed: the jobs that had finished, with their runs (kept, never re-run)."""
        if previous is not None:
            self.manifest = self._adopt(previous, plan)
        else:
            self.manifest = self._start(plan, loaded)
        self._skipped = len(plan.skipped)
        self._load_failures = len(plan.load_failures)
        for entry in self._pairs.values():
            refresh_pair(entry, self.gate)
        self.flush()

    def _start(self, plan: Plan, loaded: LoadedConfig) -> ReportManifest:
        """A new manifest: every planned run not started yet."""
        for job in plan.jobs:
            key = job.pair_key
            if key not in self._pairs:
                self._pairs[key] = self._pair(job)
            self._pairs[key].runs.append(run_entry.not_started(job))
        config_data = loaded.config.model_dump(mode="json", by_alias=True, exclude_none=True)
        config_data["mcp_servers"] = mask_mcp(config_data.get("mcp_servers", {}))
        return ReportManifest(
            tool=ToolInfo(version=__version__),
            report_id=self.store.report_id,
            name=loaded.config.name,
            started_at=now_iso(),
            timestamp=now_iso(),
            config_path=loaded.path,
            config_dir=loaded.config_dir,
            profile=loaded.profile,
            summary=summarize([], len(plan.skipped), len(plan.load_failures)),
            results=list(self._pairs.values()),
            skipped=plan.skipped,
            load_failures=_load_failures(plan),
            warnings=plan.warnings,
            scoring_weights=weights_of(loaded.config),
            resolved_config=config_data,
        )

    def _adopt(self, previous: ReportManifest, plan: Plan) -> ReportManifest:
        m = previous.model_copy(deep=True)
        if m.state == "crashed" and m.error:
            # The next close clears `error`; the report keeps a word of it (and crash.log).
            m.warnings = [*m.warnings, f"an earlier attempt crashed ({m.error}): see crash.log"]
        m.state = "running"
        m.exit_code = None
        m.error = None
        m.timestamp = now_iso()
        self._offset_ms = m.duration_ms
        self._pairs = {(p.scenario_key, p.agent_name): p for p in m.results}
        self.pending = []
        for job in plan.jobs:
            key = job.pair_key
            if key not in self._pairs:
                self._pairs[key] = self._pair(job)
                m.results.append(self._pairs[key])
            elif self._pairs[key].run_count != job.run_count:  # --force over a changed config
                old = self._pairs[key]
                self._pairs[key] = self._pair(job)
                self._pairs[key].dir = old.dir  # its folder stays where it was
                m.results = [self._pairs[key] if p is old else p for p in m.results]
            entry = self._pairs[key]
            runs = {r.run_index: r for r in entry.runs}
            folder = self._run_folder(job)
            run = runs.get(job.run_index)
            saved = read_saved_run(self.store, folder)
            if saved is not None and saved.status != "cancelled":
                run = saved  # finished, but the manifest write after it never happened
            if run is None:
                run = run_entry.not_started(job, dir=folder)
            runs[job.run_index] = run
            entry.runs = [runs[i] for i in sorted(runs)]
            if run.status == "cancelled":
                self.pending.append(job)
            else:
                self.kept.append((job, run))
        m.skipped = plan.skipped
        m.load_failures = _load_failures(plan)
        return m

    def _run_folder(self, job: JobSpec) -> str:
        """A job's run folder, in its pair's folder as the manifest records it (``dir``):
        a report resumed from before safe folder names keeps writing where it wrote; an
        empty one falls back to that old rule (the display names as they are)."""
        entry = self._pairs[job.pair_key]
        base = entry.dir or legacy_pair_dir(*job.pair_key)
        return run_in(base, job.run_index, job.run_count)

    def add_jobs(self, jobs: list[JobSpec]) -> None:
        """Adaptive repeats: more runs for their pairs (not started yet, each pair's
        ``runCount`` the new total); :attr:`pending` becomes these jobs."""
        for job in jobs:
            entry = self._pairs[job.pair_key]
            entry.runs.append(run_entry.not_started(job, dir=self._run_folder(job)))
            entry.run_count = max(entry.run_count, job.run_count)
            entry.resolved_config["runCount"] = entry.run_count
            refresh_pair(entry, self.gate)
        self.pending = list(jobs)
        self.flush()

    def unscored(self) -> list[tuple[JobSpec, RunEntry]]:
        """Kept completed runs with no score (they finished in a ``--no-score`` run)."""
        return [(job, r) for job, r in self.kept if r.status == "completed" and r.score is None]

    def record_score(
        self,
        job: JobSpec,
        score: ScoreResult,
        verdicts: JudgeVerdicts | None,
        index: SparseIndex | None = None,
    ) -> RunEntry:
        """Give a kept run the score it lacked (``--resume``), then refresh its pair."""
        entry = self._pairs[job.pair_key]
        run = next(r for r in entry.runs if r.run_index == job.run_index)
        store_score(self.store, run, score, verdicts, index)
        refresh_pair(entry, self.gate)
        self._text.changed(entry)
        self.flush(force=False)
        return run

    @staticmethod
    def _pair(job: JobSpec) -> PairEntry:
        s = job.scenario
        return PairEntry(
            scenario_key=s.key,
            base_key=s.base_key,
            variant=s.variant,
            scenario_name=s.name,
            agent_name=job.agent.name,
            agent=job.agent.adapter,
            model=job.agent.model,
            status="cancelled",
            failed=False,
            run_count=job.run_count,
            dir=pair_dir(*job.pair_key),
            prompt=s.prompt,
            judge=s.judge if isinstance(s.judge, str) else [c.model_dump() for c in s.judge],
            agent_config=job.agent.model_dump(mode="json", exclude_none=True),
            resolved_config=_resolved(job),
        )

    def flush(self, *, force: bool = True, durable: bool = False) -> None:
        """Recompute the summary and write ``report.json``.

        Unforced flushes (after each job) are rate-limited: rewriting a large manifest
        after every one of thousands of jobs would cost O(N²). Each run's own
        ``result.json`` is written at once, so nothing finished is ever only in memory.
        They also serialize again only the pairs :meth:`record` and :meth:`record_score`
        changed (:class:`ManifestText`); a forced flush serializes every pair, so whatever
        else changed the manifest is written as it is.
        """
        now = time.monotonic()
        if not force and now - self._last_flush < self._flush_interval_s:
            return
        self._last_flush = now
        if force:
            self._text.clear()
        m = self.manifest
        # Interim flushes carry the suite statistics over from the last forced one.
        earlier = None if force else m.summary
        m.summary = summarize(m.results, self._skipped, self._load_failures, statistics_of=earlier)
        m.timestamp = now_iso()
        m.duration_ms = self._offset_ms + int((now - self._t0) * 1000)
        chunks = self._text.chunks(m, self.store.redactor)
        self.store.write_manifest(m, durable=durable, chunks=chunks)

    def record(self, outcome: JobOutcome) -> RunEntry:
        """Save one job's folder, then the manifest: the job is on disk before anything else.

        Returns the run's entry, as the report holds it (what the live display shows).
        """
        folder = self._run_folder(outcome.spec)
        run = save_run(self.store, outcome, sparse_index=self.sparse_index, folder=folder)
        entry = self._pairs[outcome.spec.pair_key]
        entry.runs = [run if r.run_index == run.run_index else r for r in entry.runs]
        refresh_pair(entry, self.gate)
        self._text.changed(entry)
        self.flush(force=False)
        return run

    def finish(
        self, state: ReportState, exit_code: int | None, *, error: str | None = None
    ) -> ReportManifest:
        """Mark the run over and write the final manifest (``error``: why it crashed)."""
        self.manifest.state = state
        self.manifest.exit_code = exit_code
        self.manifest.error = error
        self.flush(durable=True)
        return self.manifest

    def close(self, state: ReportState, exit_code: int, error: str | None) -> str | None:
        """Close a run that did not end normally (crashed, interrupted), whatever fails.

        Three tries, each needing less of the code that may have failed: the normal final
        write; the manifest as it stands, without recomputing its summary; the fields
        patched into the ``report.json`` on disk. Every run saved so far is in its own
        ``result.json`` either way. Returns None once one try worked, else what stopped
        the last one.
        """
        m = self.manifest

        def as_it_stands() -> None:
            m.state, m.exit_code, m.error = state, exit_code, error
            self.store.write_manifest(m, durable=True)

        tries: list[Callable[[], object]] = [
            lambda: self.finish(state, exit_code, error=error),
            as_it_stands,
            lambda: self.store.patch_manifest(
                {"state": state, "exitCode": exit_code, "error": error}
            ),
        ]
        failure = None
        for attempt in tries:
            try:
                attempt()
                return None
            except Exception as exc:  # each try needs less than the one before
                failure = f"{type(exc).__name__}: {exc}"
        return failure
