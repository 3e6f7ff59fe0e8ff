"""``run``: load → plan → pre-flight → execute → save → report; the only module wiring stages."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axis_eval._types import ErrorKind
from axis_eval._util.redact import Redactor, looks_secret, mcp_secret_values
from axis_eval.adapters.base import AgentAdapter
from axis_eval.adapters.loader import AdapterLoadError, load_adapter
from axis_eval.adapters.registry import resolve, resolve_custom
from axis_eval.adapters.skills import check_sources
from axis_eval.config.models import LoadedConfig
from axis_eval.errors import EXIT_SIGINT, EXIT_SIGTERM, AxisError, PreflightError, UsageError
from axis_eval.execute.executor import Executor, LocalExecutor, schedule
from axis_eval.execute.job import JobContext, Scorer, StopSignal
from axis_eval.execute.lifecycle import run_phase
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import (
    OrphanReaper,
    Sentinel,
    become_subreaper,
    ignore_existing_processes,
    is_subreaper,
    new_run_token,
    pidfd_child_watcher,
)
from axis_eval.execute.scripted_model import EmbeddedModelServer
from axis_eval.execute.workspace import PASSTHROUGH, missing_env
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import AgentSpec, JobSpec, Plan
from axis_eval.progress import Display, NullDisplay
from axis_eval.report.models import ReportManifest, RunEntry
from axis_eval.report.outcome import exit_code_for
from axis_eval.runs.aggregate import PassGate
from axis_eval.runs.store import ReportStore, new_report_id, report_folder, reports_root
from axis_eval.runs.writer import ReportWriter
from axis_eval.scoring.models import ScoreResult


class RunAborted(AxisError):
    """A run-level hook (beforeAll) failed; nothing ran."""


@dataclass
class RunOptions:
    """Everything ``axis run`` takes; the CLI fills it from flags."""

    loaded: LoadedConfig
    selection: Selection = field(default_factory=Selection)
    concurrency: int | None = None
    score: bool = True
    grace_s: float = 5.0
    verbose: bool = False
    json_output: bool = False
    display: Display | None = None
    executor: Executor | None = None
    scorer: Scorer | None = None
    """Default: judges as the config's ``judging`` says (unless ``score`` is False)."""
    judge: str | None = None
    """``--judge``: an API model (``anthropic:<model>``) or an agent name for every run."""
    environ: Mapping[str, str] | None = None
    """The parent environment (default ``os.environ``)."""
    handle_signals: bool = True
    """Install SIGINT/SIGTERM handlers (first: cancel; second: exit at once)."""
    pass_score: int = 75
    """``--pass-score``: a run passes (for pass@k / pass^k) when its composite reaches it."""
    min_pass_rate: float | None = None
    """``--min-pass-rate``: a pair whose runs pass less often than this fails (exit 1)."""
    resume: ReportManifest | None = None
    """``--resume``: finish this report in its own folder (``selection`` is ignored)."""
    force: bool = False
    """``--force``: resume even when the config changed since the report started."""


def config_hash(loaded: LoadedConfig) -> str:
    """sha256 of the resolved config (profile merged): what ``--resume`` compares."""
    return hashlib.sha256(loaded.config.model_dump_json().encode()).hexdigest()


def _resume_plan(options: RunOptions) -> Plan:
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
    the_plan = plan(options.loaded, Selection(only_pairs=pairs))
    if any(counts[j.pair_key] != j.run_count for j in the_plan.jobs) and runs is not None:
        the_plan = plan(options.loaded, Selection(only_pairs=pairs, runs=runs))
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


@dataclass
class RunOutcome:
    """What a run left: its manifest, its folder and the exit code."""

    manifest: ReportManifest
    report_dir: Path
    exit_code: int


def load_adapters(the_plan: Plan, loaded: LoadedConfig) -> dict[str, AgentAdapter[Any]]:
    """Load every adapter the jobs need, once.

    Raises:
        PreflightError: an adapter cannot load (a missing CLI names its install command).
    """
    custom = resolve_custom(loaded.config, loaded.config_dir, loaded.path)
    adapters: dict[str, AgentAdapter[Any]] = {}
    used = _unique_agents(the_plan)
    for agent in used:
        if agent.adapter in adapters:
            continue
        # The pinned CLI is only needed when some entry of this adapter has no `command`.
        needs_binary = not all(a.command for a in used if a.adapter == agent.adapter)
        try:
            ref = resolve(agent.adapter, loaded.config, custom)
            adapters[agent.adapter] = load_adapter(ref, require_binary=needs_binary)
        except AdapterLoadError as exc:
            raise PreflightError(f"agent {agent.name!r}: {exc.message}", hint=exc.hint) from exc
    return adapters


def preflight(
    the_plan: Plan,
    loaded: LoadedConfig,
    environ: Mapping[str, str],
    adapters: Mapping[str, AgentAdapter[Any]] | None = None,
) -> dict[str, AgentAdapter[Any]]:
    """Check, before any job starts, every adapter's environment and the skill sources.

    Raises:
        PreflightError: an adapter cannot load, a variable it needs is not set, or a skill
            source cannot be used.
    """
    loaded_adapters = dict(adapters) if adapters is not None else load_adapters(the_plan, loaded)
    for agent in _unique_agents(the_plan):
        missing = missing_env(loaded_adapters[agent.adapter].required_env, environ)
        if missing:
            names = ", ".join(missing)
            raise PreflightError(
                f"the {agent.name!r} agent needs environment variable(s) {names}, "
                "which are not set",
                hint=f"export {missing[0]}=… before `axis run`",
            )
    problems = check_sources([s for j in the_plan.jobs for s in j.skills], loaded.config_dir)
    if problems:
        raise PreflightError(
            "skills: " + "; ".join(problems),
            hint="skills are local folders holding a SKILL.md, relative to the config",
        )
    return loaded_adapters


def _redactor(
    the_plan: Plan, adapters: Mapping[str, AgentAdapter[Any]], env: Mapping[str, str]
) -> Redactor:
    """Secrets: values of secret-looking passed-through variables, scenario values, MCP."""
    names: list[str] = []
    secrets: list[str] = []
    for job in the_plan.jobs:
        names.extend(job.env_pass)
        servers = {k: v.model_dump() for k, v in job.mcp_servers.items()}
        secrets.extend(mcp_secret_values(servers))
        secrets.extend(v for k, v in job.env_set.items() if looks_secret(k))
    for adapter in adapters.values():
        names.extend(adapter.required_env)
    names = [n for n in dict.fromkeys(names) if n not in PASSTHROUGH]
    # "Bearer <token>" headers: the token alone must not leak either.
    tails = [s.split()[-1] for s in secrets if len(s.split()) > 1]
    return Redactor.from_env(names, env, [*secrets, *tails])


class _Budget:
    """The run-level token budget: live totals of every job against ``limits.run.tokens``."""

    def __init__(self, limit: int | None, stop: StopSignal) -> None:
        self.limit = limit
        self.stop = stop
        self.totals: dict[int, int] = {}

    def update(self, job: JobSpec, total: int) -> tuple[ErrorKind, str] | None:
        self.totals[job.number] = max(total, self.totals.get(job.number, 0))
        if self.limit is not None and sum(self.totals.values()) >= self.limit:
            reason = f"Overall token limit reached ({self.limit} tokens)"
            self.stop.trigger(reason, "run_limit")
            return ("run_limit", reason)
        return None


def _install_signals(
    stop: StopSignal, display: Display, received: list[str]
) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()

    def handler(sig: signal.Signals) -> None:
        name = sig.name
        if received:
            display.stop()
            os._exit(EXIT_SIGTERM if name == "SIGTERM" else EXIT_SIGINT)
        received.append(name)
        display.message(
            f"{name} received — stopping: running jobs are cancelled, nothing new starts. "
            f"Send {name} again to exit at once."
        )
        stop.trigger(f"Run cancelled by {name}", "cancelled")

    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, handler, sig)
        installed.append(sig)
    return installed


async def _hook(
    loaded: LoadedConfig, which: str, env: dict[str, str], token: str
) -> tuple[str | None, str | None]:
    actions = loaded.config.before_all if which == "beforeAll" else loaded.config.after_all
    if not actions:
        return None, None
    folder = Path(loaded.config_dir)
    notes = Path(env.get("TMPDIR", "/tmp")) / f"axis-{which}-{os.getpid()}-{time.time_ns()}.md"
    result = await run_phase(
        actions,
        phase=which,
        cwd=folder,
        env=env,
        copy_root=folder,
        notes=notes,
        marker=f"{token}/{which}",
    )
    return result.error, result.notes


def _hook_env(environ: Mapping[str, str], loaded: LoadedConfig) -> dict[str, str]:
    names = [*PASSTHROUGH, "TMPDIR", *loaded.config.env]
    return {n: environ[n] for n in names if n in environ}


async def run_async(options: RunOptions) -> RunOutcome:
    """Run every job of the plan and write the report; see :func:`run`."""
    loaded = options.loaded
    environ = dict(options.environ if options.environ is not None else os.environ)
    display = options.display or NullDisplay()
    the_plan = _resume_plan(options) if options.resume else plan(loaded, options.selection)
    for line in the_plan.warnings:
        display.message(f"warning: {line}")
    for line in the_plan.notes:
        display.message(line)
    scripted = _start_model_server(loaded)
    try:
        adapters = load_adapters(the_plan, loaded)
        if scripted is not None:
            required = [n for a in adapters.values() for n in a.required_env]
            environ.update(scripted.environment(required, environ))
        preflight(the_plan, loaded, environ, adapters)
        judge_adapters: dict[str, AgentAdapter[Any]] = {}
        if options.score and options.scorer is None:
            # The judging stack is imported only when a run scores.
            from axis_eval.scoring.scorer import preflight_judging

            judge_adapters = preflight_judging(
                loaded,
                _unique_agents(the_plan),
                adapters,
                environ,
                judge_override=options.judge,
                model_server_url=scripted.url if scripted else None,
            )
        return await _execute(
            options, the_plan, adapters, judge_adapters, environ, display, scripted
        )
    finally:
        if scripted is not None:
            scripted.stop()


def _start_model_server(loaded: LoadedConfig) -> EmbeddedModelServer | None:
    settings = loaded.config.model_server
    if settings is None:
        return None
    return EmbeddedModelServer(settings, loaded.config_dir)


def _unique_agents(the_plan: Plan) -> list[AgentSpec]:
    used = {job.agent.name for job in the_plan.jobs}
    return [a for a in the_plan.agents if a.name in used]


async def _execute(
    options: RunOptions,
    the_plan: Plan,
    adapters: dict[str, AgentAdapter[Any]],
    judge_adapters: dict[str, AgentAdapter[Any]],
    environ: dict[str, str],
    display: Display,
    scripted: EmbeddedModelServer | None,
) -> RunOutcome:
    loaded = options.loaded
    token = new_run_token()
    hook_env = _hook_env(environ, loaded)
    error, notes = await _hook(loaded, "beforeAll", hook_env, token)
    if notes:
        display.message(f"beforeAll notes:\n{notes}")
    if error:
        raise RunAborted(f"beforeAll failed: {error}")
    root = reports_root(loaded.config_dir)
    previous = options.resume
    folder = (
        report_folder(loaded.config_dir, previous.report_id)
        if previous
        else root / new_report_id(root)
    )
    store = ReportStore(folder, _redactor(the_plan, adapters, environ))
    writer = ReportWriter(
        store,
        the_plan,
        loaded,
        gate=PassGate(options.pass_score, options.min_pass_rate),
        previous=previous,
        sparse_index=options.score,
    )
    writer.manifest.config_hash = config_hash(loaded)
    writer.manifest.before_all_output = notes
    shown = the_plan
    """What the display tracks: a resumed report's every job, the kept ones included."""
    if previous is not None:
        display.message(
            f"Resuming report {previous.report_id}: {len(writer.kept)} finished job(s) kept, "
            f"{len(writer.pending)} to run."
        )
        the_plan = the_plan.model_copy(update={"jobs": writer.pending})
    writer.flush()
    stop = StopSignal()
    budget = _Budget(
        loaded.config.settings.limits.run.tokens if loaded.config.settings.limits.run else None,
        stop,
    )
    received: list[str] = []
    installed = _install_signals(stop, display, received) if options.handle_signals else []
    concurrency = options.concurrency or loaded.config.settings.concurrency
    executor = options.executor or LocalExecutor(concurrency)

    def on_tokens(job: JobSpec, total: int) -> tuple[ErrorKind, str] | None:
        display.tokens(job, total)
        return budget.update(job, total)

    scorer = options.scorer
    if options.score and scorer is None:
        from axis_eval.scoring.scorer import JudgeScorer

        scorer = JudgeScorer.for_config(
            loaded,
            judge_adapters,
            environ,
            redactor=store.redactor,
            run_token=token,
            model_server_url=scripted.url if scripted else None,
            judge_override=options.judge,
        )
    ctx = JobContext(
        run_token=token,
        adapters=adapters,
        parent_env=environ,
        stop=stop,
        grace_s=options.grace_s,
        scorer=scorer if options.score else None,
        on_phase=display.phase,
        on_tokens=on_tokens,
        model_server_url=scripted.url if scripted else None,
        extra_env=scripted.job_env() if scripted else {},
    )

    def on_result(outcome: JobOutcome) -> None:
        writer.record(outcome)
        budget.update(outcome.spec, outcome.tokens)
        display.finished(outcome.spec, outcome)

    display.start(shown, store.report_id)
    to_score = _resume_scoring(options, writer, scorer, display)
    scoring_now = {id(run) for _, run in to_score}
    for job, run in writer.kept:
        if id(run) not in scoring_now:
            display.finished(job, _KeptRun(run))  # shown as they are, before the rest
    was_subreaper = is_subreaper()
    become_subreaper()
    ignore_existing_processes()
    sentinel = await Sentinel.start(token)
    run_limit = loaded.config.settings.limits.run
    timer: asyncio.TimerHandle | None = None
    if run_limit is not None and run_limit.time_minutes:
        minutes = run_limit.time_minutes
        timer = asyncio.get_running_loop().call_later(
            minutes * 60,
            stop.trigger,
            f"Overall time limit reached ({minutes:g}m)",
            "run_limit",
        )
    try:
        async with OrphanReaper():
            await asyncio.gather(
                schedule(the_plan.jobs, executor, ctx, on_result),
                _score_kept(to_score, writer, scorer, loaded, display, stop, concurrency),
            )
    finally:
        if timer is not None:
            timer.cancel()
        await sentinel.close()
        if not was_subreaper:
            become_subreaper(False)  # an API caller's process is left as we found it
        for sig in installed:
            asyncio.get_running_loop().remove_signal_handler(sig)
    if scripted is not None:
        writer.manifest.model_server = scripted.summary()
        writer.store.write_lines("model-server.ndjson", scripted.log_lines())
    return await _finish(writer, loaded, hook_env, token, received, display)


@dataclass(frozen=True)
class _KeptRun:
    """A run a resumed report kept, as the display sees a finished job."""

    run: RunEntry

    @property
    def status(self) -> str:
        return self.run.status

    @property
    def error(self) -> str | None:
        return self.run.error

    @property
    def duration_ms(self) -> int:
        return self.run.duration_ms

    @property
    def tokens(self) -> int:
        return self.run.token_usage.total if self.run.token_usage else 0

    @property
    def score(self) -> ScoreResult | None:
        return self.run.score


def _resume_scoring(
    options: RunOptions, writer: ReportWriter, scorer: Scorer | None, display: Display
) -> list[tuple[JobSpec, RunEntry]]:
    """The kept runs that finished unscored and that this run scores (``--resume``).

    With ``--no-score`` (or a custom scorer that can only score in a workspace) they stay
    unscored and the report says how to score them.
    """
    unscored = writer.unscored()
    if not unscored:
        return []
    if options.score and scorer is not None:
        from axis_eval.scoring.scorer import JudgeScorer

        if isinstance(scorer, JudgeScorer):
            display.message(
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
    display.message(f"note: {note}")
    return []


async def _score_kept(
    runs: list[tuple[JobSpec, RunEntry]],
    writer: ReportWriter,
    scorer: Scorer | None,
    loaded: LoadedConfig,
    display: Display,
    stop: StopSignal,
    concurrency: int,
) -> None:
    """Score kept runs beside the pending jobs, through the run's one scorer.

    The scorer's judge concurrency limit, cache and spend accounting are shared with the
    jobs; at most ``concurrency`` runs are read and judged at once. After a stop (a signal,
    a run limit) no new one starts: those left stay unscored for the next ``--resume``.
    """
    if not runs:
        return
    from axis_eval.scoring.rescore import score_finished_run
    from axis_eval.scoring.scorer import JudgeScorer

    assert isinstance(scorer, JudgeScorer)
    gate = asyncio.Semaphore(concurrency)

    async def one(job: JobSpec, run: RunEntry) -> None:
        async with gate:
            if stop.event.is_set():
                return
            display.phase(job, "scoring")
            new = await score_finished_run(
                scorer, writer.store.folder, job.pair_key, run, judging=loaded.config.judging
            )
            if new.score is not None:
                writer.record_score(job, new.score, new.verdicts, new.sparse_index)
            else:
                line = f"{job.id}: {new.reason or 'not scored'}"
                writer.manifest.warnings = [*writer.manifest.warnings, line]
            display.finished(job, _KeptRun(run))

    await asyncio.gather(*(one(job, run) for job, run in runs))


async def _finish(
    writer: ReportWriter,
    loaded: LoadedConfig,
    hook_env: dict[str, str],
    token: str,
    received: list[str],
    display: Display,
) -> RunOutcome:
    if received:
        code = EXIT_SIGTERM if received[0] == "SIGTERM" else EXIT_SIGINT
        manifest = writer.finish("interrupted", code)
    else:
        manifest = writer.finish("finished", None)
        code = exit_code_for(manifest)
        manifest = writer.finish("finished", code)
    s = manifest.summary
    after_env = {
        **hook_env,
        "AXIS_REPORT_DIR": str(writer.store.folder),
        "AXIS_TOTAL": str(s.total),
        "AXIS_COMPLETED": str(s.completed),
        "AXIS_FAILED": str(s.failed),
        "AXIS_DURATION_MS": str(manifest.duration_ms),
    }
    # afterAll runs once per `axis run`, interrupted or not: it is where cleanup lives.
    error, notes = await _hook(loaded, "afterAll", after_env, token)
    if notes or error:
        writer.manifest.after_all_output = "\n\n".join(x for x in (notes, error) if x)
        writer.flush()
    if error:
        display.message(f"afterAll failed: {error}")
        if not received:
            code = max(code, 1)
            manifest = writer.finish("finished", code)
    _write_html(writer.store.folder, manifest, display)
    display.stop()
    return RunOutcome(manifest=manifest, report_dir=writer.store.folder, exit_code=code)


def _write_html(folder: Path, manifest: ReportManifest, display: Display) -> None:
    """``report.html`` beside ``report.json``, as AXIS writes it at the end of every run.

    The page is a view of files already on disk: failing to write it warns and never costs
    the run its report or its exit code.
    """
    from axis_eval.report.html import write_html

    try:
        write_html(folder, manifest=manifest)
    except Exception as exc:
        display.message(f"warning: report.html not written: {exc}")


def run(options: RunOptions) -> RunOutcome:
    """Run a config's jobs and write the report (a sync wrapper around :func:`run_async`).

    Raises:
        ConfigError, UsageError, PreflightError: before anything runs (exit code 2).
    """
    with pidfd_child_watcher():
        return asyncio.run(run_async(options))
