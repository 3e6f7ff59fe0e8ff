"""``--resume``: finish a report in its own folder.

The plan is the original report's jobs, from the current config (refused when the config
changed, unless ``--force``). The writer keeps every finished run; the pending jobs run as
in a fresh run, and kept runs that finished unscored (a ``--no-score`` run) are scored from
their transcripts beside them, through the run's one scorer.
"""

from __future__ import annotations

import asyncio

from axis_eval.errors import UsageError
from axis_eval.pipeline.options import RunOptions, config_hash
from axis_eval.pipeline.session import RunSession
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import JobSpec, Plan
from axis_eval.report.models import RunEntry

KeptRuns = list[tuple[JobSpec, RunEntry]]


def resume_plan(options: RunOptions) -> Plan:
    """The original report's jobs, from the current config.

    Raises:
        UsageError: the config changed since the report started (unless ``--force``).
    """
    previous = options.resume
    assert previous is not None
    changed: list[str] = []
    if previous.config_hash is None:
        changed.append("the report has no config hash (it predates --resume)")
    elif previous.config_hash != config_hash(options.loaded):
        changed.append("the config changed since the report started")
    pairs = frozenset((p.scenario_key, p.agent_name) for p in previous.results)
    counts = {(p.scenario_key, p.agent_name): p.run_count for p in previous.results}
    runs = next(iter(set(counts.values()))) if len(set(counts.values())) == 1 else None
    sandbox = options.selection.sandbox  # --sandbox holds for the resumed jobs too
    # Adaptive pairs (`--runs auto` or settings) resume adaptive, with the runs they grew.
    adaptive = all(p.adaptive is not None for p in previous.results)
    the_plan = plan(
        options.loaded,
        Selection(
            only_pairs=pairs,
            runs="auto" if adaptive else None,
            sandbox=sandbox,
            pair_runs=counts,
        ),
    )
    if any(counts[j.pair_key] != j.run_count for j in the_plan.jobs) and runs is not None:
        the_plan = plan(options.loaded, Selection(only_pairs=pairs, runs=runs, sandbox=sandbox))
    planned = {j.pair_key for j in the_plan.jobs}
    if planned != pairs:
        changed.append(f"{len(pairs - planned)} of the report's pairs are no longer planned")
    if any(counts[j.pair_key] != j.run_count for j in the_plan.jobs):
        changed.append("run counts differ from the report's")
    if changed and not options.force:
        raise UsageError(
            f"cannot resume report {previous.report_id}: " + "; ".join(changed),
            hint="pass --force to resume anyway (finished runs are kept)",
        )
    return the_plan


def start_kept_runs(session: RunSession) -> KeptRuns:
    """Show the kept runs and return those this run scores (see :func:`kept_runs_to_score`).

    The others are shown at once, as they are, before the pending jobs start; the ones to
    score are shown when their score is in.
    """
    to_score = kept_runs_to_score(session)
    scoring_now = {id(run) for _, run in to_score}
    for job, run in session.writer.kept:
        if id(run) not in scoring_now:
            session.display.finished(job, run)
    return to_score


def kept_runs_to_score(session: RunSession) -> KeptRuns:
    """The kept runs that finished unscored and that this run scores.

    With ``--no-score`` (or a custom scorer that can only score in a workspace) they stay
    unscored and the report says how to score them.
    """
    writer, options = session.writer, session.options
    unscored = writer.unscored()
    if not unscored:
        return []
    if options.score and session.scorer is not None:
        from axis_eval.scoring.scorer import JudgeScorer

        if isinstance(session.scorer, JudgeScorer):
            session.display.message(
                f"Scoring {len(unscored)} finished run(s) that were never scored, from their "
                "transcripts, beside the jobs left to run."
            )
            return unscored
    why = "--no-score" if not options.score else "this scorer needs their workspaces"
    note = (
        f"{len(unscored)} run(s) kept from before the interruption are not scored ({why}); "
        f"`axis score {writer.store.report_id}` scores them"
    )
    writer.manifest.warnings = [*writer.manifest.warnings, note]
    session.display.message(f"note: {note}")
    return []


async def score_kept(session: RunSession, runs: KeptRuns) -> None:
    """Score kept runs beside the pending jobs, through the run's one scorer.

    The scorer's judge concurrency limit, cache and spend accounting are shared with the
    jobs; at most ``concurrency`` runs are read and judged at once. After a stop (a signal,
    a run limit) no new one starts: those left stay unscored for the next ``--resume``.
    """
    if not runs:
        return
    from axis_eval.scoring.rescore import score_finished_run
    from axis_eval.scoring.scorer import JudgeScorer

    scorer, writer, display = session.scorer, session.writer, session.display
    assert isinstance(scorer, JudgeScorer)
    judging = session.loaded.config.judging
    gate = asyncio.Semaphore(session.concurrency)

    async def one(job: JobSpec, run: RunEntry) -> None:
        async with gate:
            if session.stop.event.is_set():
                return
            display.phase(job, "scoring")
            new = await score_finished_run(
                scorer, writer.store.folder, job.pair_key, run, judging=judging
            )
            if new.score is not None:
                writer.record_score(job, new.score, new.verdicts, new.sparse_index)
            else:
                line = f"{job.id}: {new.reason or 'not scored'}"
                writer.manifest.warnings = [*writer.manifest.warnings, line]
            display.finished(job, run)

    await asyncio.gather(*(one(job, run) for job, run in runs))
