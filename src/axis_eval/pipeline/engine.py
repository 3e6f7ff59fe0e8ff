"""``run``: the steps of one run, in order; each step's details live in its own module."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from axis_eval.adapters.base import AgentAdapter
from axis_eval.config.models import AdaptiveRuns, LoadedConfig
from axis_eval.errors import EXIT_SIGINT, EXIT_SIGTERM
from axis_eval.execute.executor import schedule
from axis_eval.execute.process import new_run_token, pidfd_child_watcher
from axis_eval.execute.scripted_model import EmbeddedModelServer
from axis_eval.execute.workspace import remove_released
from axis_eval.pipeline import crash, hooks, resume
from axis_eval.pipeline.checks import (
    GitFetch,
    load_adapters,
    preflight,
    run_redactor,
    sandbox_preflight,
    unique_agents,
)
from axis_eval.pipeline.options import RunOptions, RunOutcome, config_hash
from axis_eval.pipeline.session import RunSession
from axis_eval.planning.matrix import plan
from axis_eval.planning.models import JobSpec, Plan
from axis_eval.progress import Display, NullDisplay
from axis_eval.report.models import RemoteEntry, ReportManifest
from axis_eval.report.outcome import exit_code_for
from axis_eval.runs.adaptive import next_round, stop_record
from axis_eval.runs.aggregate import PassGate
from axis_eval.runs.store import (
    REPORTS_DIR,
    ReportStore,
    check_folders,
    new_report_id,
    report_folder,
    reports_root,
)
from axis_eval.runs.writer import ReportWriter

Adapters = dict[str, AgentAdapter[Any]]


def run(options: RunOptions) -> RunOutcome:
    """Run a config's jobs and write the report (a sync wrapper around :func:`run_async`).

    Raises:
        ConfigError, UsageError, PreflightError: before anything runs (exit code 2).
        RunCrashed: a bug ended the run after its report was opened; the report is
            closed ``crashed`` (exit code 3, see :mod:`.crash`).
    """
    report = crash.OpenReport(options.loaded.config_dir)
    with pidfd_child_watcher():
        try:
            return asyncio.run(_run_async(options, report))
        except BaseException as exc:
            # Only what left the event loop without passing through _execute's handler
            # (a KeyboardInterrupt or SystemExit raised inside a task) is still open here.
            report.sweep()
            raised = report.close_after(exc)
            if raised is None or raised is exc:
                raise
            raise raised from exc


async def run_async(options: RunOptions) -> RunOutcome:
    """Plan, check, run every job of the plan and write the report; see :func:`run`."""
    return await _run_async(options, crash.OpenReport(options.loaded.config_dir))


async def _run_async(options: RunOptions, report: crash.OpenReport) -> RunOutcome:
    loaded = options.loaded
    environ = dict(options.environ if options.environ is not None else os.environ)
    display = options.display or NullDisplay()
    the_plan = resume.resume_plan(options) if options.resume else plan(loaded, options.selection)
    # Where the report goes, before any hook or job: a `.axis` that is a file fails here.
    check_folders(loaded.config_dir, REPORTS_DIR)
    for line in the_plan.warnings:
        display.message(f"warning: {line}")
    for line in the_plan.notes:
        display.message(line)
    remote = options.executor is not None and options.executor.remote
    fallback = None if remote else sandbox_preflight(the_plan)  # workers probe their own
    if fallback is not None:
        display.message(f"WARNING: {fallback}")
    scripted = _start_model_server(loaded)
    if scripted is not None:
        display.message(
            f"Scripted model server ({scripted.tape_path.name}): agents without an endpoint "
            "of their own and their judges answer from the tape; usage is simulated, no "
            "tokens are spent."
        )
    executor = options.executor
    try:
        adapters, judge_adapters = _check(options, the_plan, environ, scripted)
        if scripted is not None and options.score and options.scorer is None:
            # Said before any job starts: a tape that does not answer the judge would
            # otherwise show only as withheld scores after every run.
            from axis_eval.pipeline.tape_judging import tape_judging_warnings

            for line in tape_judging_warnings(the_plan, loaded, judge_override=options.judge):
                display.message(f"warning: {line}")
        if executor is not None:  # where the jobs run is reached and checked before any
            warnings = await executor.prepare(
                the_plan,
                _added(environ, options),
                model_server_url=scripted.url if scripted else None,
                job_env=scripted.job_env() if scripted else None,
            )
            for line in warnings:
                display.message(f"warning: {line}")
        return await _execute(
            options, the_plan, adapters, judge_adapters, environ, display, scripted, report
        )
    finally:
        try:
            if executor is not None:
                await executor.aclose()
        finally:
            if scripted is not None:
                scripted.stop()
            # The jobs' empty folders (the report is written by now), off the event loop:
            # another run may share it. Cancelled meanwhile, the thread goes on.
            await asyncio.to_thread(remove_released)


def _added(environ: dict[str, str], options: RunOptions) -> dict[str, str]:
    """What the run added to its parent environment (the scripted server's placeholder
    keys): a remote worker's jobs get these on top of the worker's own variables."""
    parent = options.environ if options.environ is not None else os.environ
    return {name: value for name, value in environ.items() if parent.get(name) != value}


def _check(
    options: RunOptions,
    the_plan: Plan,
    environ: dict[str, str],
    scripted: EmbeddedModelServer | None,
) -> tuple[Adapters, Adapters]:
    """Load and check the agents' adapters, then the judges' (when this run judges).

    The scripted model server's variables join ``environ`` first: the adapters' checks
    must see what their agents will get.
    """
    loaded = options.loaded
    # Jobs on other machines: their CLIs and keys are the workers' (their pre-flight).
    here = options.executor is None or not options.executor.remote
    adapters = load_adapters(the_plan, loaded, binaries=here)
    if scripted is not None:
        required = [n for a in adapters.values() for n in a.required_env]
        environ.update(scripted.environment(required, environ))
    git = GitFetch(options.offline, options.refresh_skills, options.refresh_repos)
    say = options.display.message if options.display else None
    preflight(the_plan, loaded, environ, adapters, agent_env=here, git=git, say=say)
    if not options.score or options.scorer is not None:
        return adapters, {}
    # The judging stack is imported only when a run scores.
    from axis_eval.scoring.scorer import preflight_judging

    judge_adapters = preflight_judging(
        loaded,
        unique_agents(the_plan),
        adapters,
        environ,
        judge_override=options.judge,
        model_server_url=scripted.url if scripted else None,
    )
    return adapters, judge_adapters


async def _execute(
    options: RunOptions,
    the_plan: Plan,
    adapters: Adapters,
    judge_adapters: Adapters,
    environ: dict[str, str],
    display: Display,
    scripted: EmbeddedModelServer | None,
    report: crash.OpenReport,
) -> RunOutcome:
    """beforeAll → open the report → run the pending jobs (and score kept runs) → finish.

    Once the report is open, whatever ends the run early closes it (:mod:`.crash`): it
    never stays ``running``.
    """
    token = new_run_token()
    hook_env = hooks.hook_env(environ, options.loaded)
    notes = await hooks.before_all(options.loaded, hook_env, token, display)
    writer = _open_report(options, the_plan, adapters, environ)
    report.opened(writer, display, token)
    try:
        if options.resume is not None:
            display.message(
                f"Resuming report {writer.store.report_id}: {len(writer.kept)} finished "
                f"job(s) kept, {len(writer.pending)} to run."
            )
        writer.manifest.before_all_output = notes
        writer.flush()
        session = RunSession(
            options,
            writer,
            display,
            token=token,
            environ=environ,
            adapters=adapters,
            judge_adapters=judge_adapters,
            scripted=scripted,
        )
        await _run_jobs(session, the_plan)
        if scripted is not None:
            writer.manifest.model_server = scripted.summary()
            writer.store.write_lines("model-server.ndjson", scripted.log_lines())
        outcome = await _finish(session, hook_env)
    except BaseException as exc:
        raised = report.close_after(exc)
        if raised is None or raised is exc:
            raise
        raise raised from exc
    report.settled = True
    return outcome


async def _run_jobs(session: RunSession, the_plan: Plan) -> None:
    """The pending jobs, and the kept runs to score beside them, inside the guards.

    One task group: when either side fails, the other is cancelled (its running agents
    stopped) before the error leaves the guards, which then sweep what is left.
    """
    writer = session.writer
    session.display.start(the_plan, writer.store.report_id)  # a resumed report's kept jobs
    to_score = resume.start_kept_runs(session)
    rules = _adaptive_rules(session, the_plan)
    async with session.guarded(), asyncio.TaskGroup() as group:
        group.create_task(_rounds(session, the_plan, rules))
        if to_score:
            group.create_task(resume.score_kept(session, to_score))


def _adaptive_rules(session: RunSession, the_plan: Plan) -> dict[tuple[str, str], AdaptiveRuns]:
    """The adaptive pairs' rules; none when this run does not score (a note says so)."""
    rules = {(p.scenario_key, p.agent_name): p.adaptive for p in the_plan.pairs if p.adaptive}
    if rules and not session.options.score:
        session.display.message(
            "note: adaptive repeats need scores: with --no-score every adaptive pair runs "
            "its min runs only"
        )
        return {}
    return rules


async def _rounds(
    session: RunSession, the_plan: Plan, rules: dict[tuple[str, str], AdaptiveRuns]
) -> None:
    """The planned jobs, then (adaptive repeats) round after round of two more runs for
    the pairs whose interval is still too wide (:mod:`axis_eval.runs.adaptive`), until
    none needs more or the run is stopped. Each round is run-major across its pairs."""
    writer = session.writer
    jobs = writer.pending
    last: dict[tuple[str, str], JobSpec] = {}
    for job in the_plan.jobs:
        known = last.get(job.pair_key)
        if known is None or job.run_index > known.run_index:
            last[job.pair_key] = job
    number = max((j.number for j in the_plan.jobs), default=0)
    _record_stops(writer, rules, running=True)  # a report read mid-run says it adapts
    writer.flush()
    while True:
        await schedule(jobs, session.executor, session.ctx, session.on_result)
        for job in jobs:
            last[job.pair_key] = job
        if not rules:
            return
        stopped = session.stop.event.is_set()
        _record_stops(writer, rules, stopped=stopped)
        jobs = [] if stopped else next_round(writer.manifest.results, rules, last, number + 1)
        if not jobs:
            writer.flush()
            return
        number += len(jobs)
        writer.add_jobs(jobs)
        grow = getattr(session.display, "grow", None)  # optional: the CLI's displays have it
        if callable(grow):
            grow(jobs)
        grown = len(jobs) // 2
        session.display.message(
            f"adaptive repeats: {grown} pair(s) still wider than their target: 2 more "
            f"runs each ({len(jobs)} job(s))"
        )


def _record_stops(
    writer: ReportWriter,
    rules: dict[tuple[str, str], AdaptiveRuns],
    *,
    stopped: bool = False,
    running: bool = False,
) -> None:
    """Each adaptive pair's ``adaptive`` field from its runs so far."""
    for entry in writer.manifest.results:
        rule = rules.get((entry.scenario_key, entry.agent_name))
        if rule is not None:
            entry.adaptive = stop_record(entry, rule, stopped=stopped, running=running)


def _open_report(
    options: RunOptions,
    the_plan: Plan,
    adapters: Adapters,
    environ: dict[str, str],
) -> ReportWriter:
    """A new report folder, or the resumed report's own (its finished runs kept)."""
    loaded = options.loaded
    previous = options.resume
    root = reports_root(loaded.config_dir)
    folder = (
        report_folder(loaded.config_dir, previous.report_id)
        if previous
        else root / new_report_id(root)
    )
    writer = ReportWriter(
        ReportStore(folder, run_redactor(the_plan, adapters, environ)),
        the_plan,
        loaded,
        gate=PassGate(options.pass_score, options.min_pass_rate),
        previous=previous,
        sparse_index=options.score,
    )
    writer.manifest.config_hash = config_hash(loaded)
    writer.manifest.remotes = [
        RemoteEntry(url=r.url, ref=r.ref, commit=r.commit, listed_by=r.listed_by)
        for r in loaded.remotes
    ] or None
    return writer


async def _finish(session: RunSession, hook_env: dict[str, str]) -> RunOutcome:
    """The final manifest and exit code, then afterAll, then ``report.html``."""
    writer, display, received = session.writer, session.display, session.received
    if received:
        code = EXIT_SIGTERM if received[0] == "SIGTERM" else EXIT_SIGINT
        manifest = writer.finish("interrupted", code)
    else:
        manifest = writer.finish("finished", None)
        code = exit_code_for(manifest)
        manifest = writer.finish("finished", code)
    # afterAll runs once per `axis run`, interrupted or not: it is where cleanup lives.
    after_env = hooks.after_all_env(hook_env, writer.store.folder, manifest)
    error, notes = await hooks.run_hook(session.loaded, "afterAll", after_env, session.token)
    if session.loaded.config.after_all:
        writer.store.forget()  # the hook may have changed the report folder: the page reads it
    if notes or error:
        writer.manifest.after_all_output = "\n\n".join(x for x in (notes, error) if x)
        writer.flush()
    if error:
        display.message(f"afterAll failed: {error}")
        if not received:
            code = max(code, 1)
            manifest = writer.finish("finished", code)
    _write_html(writer.store, manifest, display)
    display.stop()
    return RunOutcome(
        manifest=manifest,
        report_dir=writer.store.folder,
        exit_code=code,
        redactor=writer.store.redactor,
    )


def _write_html(store: ReportStore, manifest: ReportManifest, display: Display) -> None:
    """``report.html`` beside ``report.json``, as AXIS writes it at the end of every run.

    The page is a view of files already on disk (the store hands it the transcripts it
    still holds): failing to write it warns and never costs the run its report or its exit
    code.
    """
    from axis_eval.report.html import write_html

    try:
        write_html(store.folder, manifest=manifest, written=store)
    except Exception as exc:
        display.message(f"warning: report.html not written: {exc}")


def _start_model_server(loaded: LoadedConfig) -> EmbeddedModelServer | None:
    settings = loaded.config.model_server
    if settings is None:
        return None
    return EmbeddedModelServer(settings, loaded.config_dir)
