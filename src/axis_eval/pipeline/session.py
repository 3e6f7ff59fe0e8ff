"""One run while its jobs run: what every job shares, and what surrounds them.

A :class:`RunSession` holds the report writer, the stop signal, the run-level token budget,
the scorer, the job context handed to the executor and the signals received. Its
:meth:`~RunSession.guarded` block is what must be in place while any job runs and undone
after the last one, whatever happens: the signal handlers, this process as subreaper, the
sentinel, the orphan reaper and the run's time limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from axis_eval._types import ErrorKind
from axis_eval.adapters.base import AgentAdapter
from axis_eval.errors import EXIT_SIGINT, EXIT_SIGTERM
from axis_eval.execute.executor import LocalExecutor
from axis_eval.execute.job import JobContext, Scorer, StopSignal
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import (
    OrphanReaper,
    Sentinel,
    ignore_existing_processes,
    subreaper,
)
from axis_eval.execute.sandbox.sandboxes import Sandboxes
from axis_eval.execute.scripted_model import EmbeddedModelServer
from axis_eval.pipeline.options import RunOptions
from axis_eval.planning.models import JobSpec
from axis_eval.progress import Display
from axis_eval.runs.writer import ReportWriter


class RunBudget:
    """The run-level token budget: live totals of every job against ``limits.run.tokens``."""

    def __init__(self, limit: int | None, stop: StopSignal) -> None:
        self.limit = limit
        self.stop = stop
        self.totals: dict[int, int] = {}

    def update(self, job: JobSpec, total: int) -> tuple[ErrorKind, str] | None:
        """Record a job's total so far; past the limit, stop the run and say why."""
        self.totals[job.number] = max(total, self.totals.get(job.number, 0))
        if self.limit is not None and sum(self.totals.values()) >= self.limit:
            reason = f"Overall token limit reached ({self.limit} tokens)"
            self.stop.trigger(reason, "run_limit")
            return ("run_limit", reason)
        return None


class RunSession:
    """What the jobs of one run share while they run."""

    def __init__(
        self,
        options: RunOptions,
        writer: ReportWriter,
        display: Display,
        *,
        token: str,
        environ: dict[str, str],
        adapters: dict[str, AgentAdapter[Any]],
        judge_adapters: dict[str, AgentAdapter[Any]],
        scripted: EmbeddedModelServer | None,
    ) -> None:
        loaded = options.loaded
        settings = loaded.config.settings
        self.options = options
        self.loaded = loaded
        self.writer = writer
        self.display = display
        self.token = token
        self.stop = StopSignal()
        run_limit = settings.limits.run
        self.budget = RunBudget(run_limit.tokens if run_limit else None, self.stop)
        self.concurrency = options.concurrency or settings.concurrency
        self.executor = options.executor or LocalExecutor(self.concurrency)
        if isinstance(self.executor, LocalExecutor) and self.executor.notice:
            display.message(f"warning: {self.executor.notice}")  # the fd limit lowered it
        self.received: list[str] = []
        """The signals received, in order (the first decides the exit code)."""
        self.scorer = _scorer(options, judge_adapters, environ, writer, token, scripted)
        self.ctx = JobContext(
            run_token=token,
            adapters=adapters,
            parent_env=environ,
            stop=self.stop,
            grace_s=options.grace_s,
            scorer=self.scorer if options.score else None,
            on_phase=display.phase,
            on_tokens=self.on_tokens,
            on_place=display.placed,
            model_server_url=scripted.url if scripted else None,
            extra_env=scripted.job_env() if scripted else {},
            # No confined job sees the project's .axis: other runs' reports, baselines and
            # the judge cache hold transcripts.
            sandboxes=Sandboxes(
                token,
                hidden=[str(Path(loaded.config_dir) / ".axis")],
                parent_home=environ.get("HOME"),
            ),
        )

    def on_tokens(self, job: JobSpec, total: int) -> tuple[ErrorKind, str] | None:
        """A job's live token count grew: show it and hold it against the budget."""
        self.display.tokens(job, total)
        return self.budget.update(job, total)

    def on_result(self, outcome: JobOutcome) -> None:
        """A job ended: save it, count its tokens, show its run as the report holds it."""
        run = self.writer.record(outcome)
        self.budget.update(outcome.spec, outcome.tokens)
        self.display.finished(outcome.spec, run)

    @contextlib.asynccontextmanager
    async def guarded(self) -> AsyncIterator[None]:
        """Jobs run inside this block; everything it sets up is undone on the way out.

        Subreaper: an agent's orphans re-parent to this process, where the reaper collects
        them. The sentinel kills the run's marked processes if this process dies, even by
        SIGKILL. An API caller's process is left as it was found.
        """
        loop = asyncio.get_running_loop()
        installed = self._install_signals(loop) if self.options.handle_signals else []
        timer: asyncio.TimerHandle | None = None
        try:
            with subreaper():
                ignore_existing_processes()
                sentinel = await Sentinel.start(self.token)
                try:
                    timer = self._start_time_limit(loop)
                    async with OrphanReaper():
                        yield
                finally:
                    if timer is not None:
                        timer.cancel()
                    try:
                        if self.ctx.sandboxes is not None:
                            await self.ctx.sandboxes.aclose()  # the run's containers
                    finally:
                        await sentinel.close()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    def _start_time_limit(self, loop: asyncio.AbstractEventLoop) -> asyncio.TimerHandle | None:
        run_limit = self.loaded.config.settings.limits.run
        if run_limit is None or not run_limit.time_minutes:
            return None
        minutes = run_limit.time_minutes
        reason = f"Overall time limit reached ({minutes:g}m)"
        return loop.call_later(minutes * 60, self.stop.trigger, reason, "run_limit")

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> list[signal.Signals]:
        """First SIGINT/SIGTERM: cancel the running jobs, start nothing new. Second: exit."""

        def handler(sig: signal.Signals) -> None:
            name = sig.name
            if self.received:
                code = EXIT_SIGTERM if name == "SIGTERM" else EXIT_SIGINT
                # Exit at once, but not with the report saying `running`: one last write
                # (the sentinel then kills the agents as this process goes).
                self.writer.close("interrupted", code, None)
                with contextlib.suppress(Exception):
                    self.display.stop()
                os._exit(code)
            self.received.append(name)
            self.display.message(
                f"{name} received — stopping: running jobs are cancelled, nothing new starts. "
                f"Send {name} again to exit at once."
            )
            self.stop.trigger(f"Run cancelled by {name}", "cancelled")

        installed: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, handler, sig)
            installed.append(sig)
        return installed


def _scorer(
    options: RunOptions,
    judge_adapters: dict[str, AgentAdapter[Any]],
    environ: Mapping[str, str],
    writer: ReportWriter,
    token: str,
    scripted: EmbeddedModelServer | None,
) -> Scorer | None:
    """The caller's scorer, else the judges the config names (None with ``--no-score``)."""
    if options.scorer is not None or not options.score:
        return options.scorer
    # The judging stack is imported only when a run scores.
    from axis_eval.scoring.scorer import JudgeScorer

    return JudgeScorer.for_config(
        options.loaded,
        judge_adapters,
        environ,
        redactor=writer.store.redactor,
        run_token=token,
        model_server_url=scripted.url if scripted else None,
        judge_override=options.judge,
    )
