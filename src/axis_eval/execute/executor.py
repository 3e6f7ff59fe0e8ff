"""The executor seam and the scheduler that feeds it.

A job is one async function over a serializable :class:`JobSpec` returning a serializable
:class:`JobOutcome`. The scheduler owns the order (run-major, from the plan), the
concurrency bound, cancellation and saving; an :class:`Executor` only runs one job. The
local asyncio pool is the executor here; the Dask one (:mod:`axis_eval.distributed`)
implements the same members and plugs in unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from axis_eval.execute.job import JobContext, cancelled_outcome, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process.fds import FDS_PER_JOB, fit_concurrency
from axis_eval.planning.models import JobSpec, Plan


class Executor(Protocol):
    """Runs one job somewhere and returns its outcome."""

    @property
    def capacity(self) -> int:
        """How many jobs it can run at once (known after :meth:`prepare`)."""
        ...

    @property
    def remote(self) -> bool:
        """Whether jobs may run on other machines, which check their own agent CLIs and
        variables (``axis run`` then does not require them here)."""
        ...

    async def prepare(
        self,
        plan: Plan,
        environ: Mapping[str, str],
        *,
        model_server_url: str | None = None,
        job_env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Before anything runs: reach where the jobs will run and check it can run this
        plan (``environ``: the variables the run adds for its agents, such as the scripted
        model server's placeholder keys; ``model_server_url`` and ``job_env``: the embedded
        scripted server and what every job gets for it). Returns warnings to show.

        Raises:
            PreflightError: it cannot (exit 2; nothing ran).
        """
        ...

    async def execute(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        """Run ``spec``; must honour ``ctx.stop`` and never raise for a job's own failure."""
        ...

    async def aclose(self) -> None:
        """Let go of what :meth:`prepare` reached (idempotent; also after a failed run)."""
        ...


class LocalExecutor:
    """Runs jobs in this process's event loop (the ``--concurrency`` pool).

    Every running job holds file descriptors here (its agent's pipes, a pidfd, sockets of
    the scripted model server), so the bound is fitted to this process's descriptor limit
    (:func:`~axis_eval.execute.process.fds.fit_concurrency`: the soft limit is raised if
    the hard one allows, the concurrency lowered if it still does not fit); ``notice`` then
    says so, for the caller to show once.
    """

    def __init__(self, concurrency: int, *, fds_per_job: int = FDS_PER_JOB) -> None:
        self.requested = concurrency
        """The concurrency asked for."""
        self._capacity, self.notice = fit_concurrency(concurrency, fds_per_job)

    @property
    def capacity(self) -> int:
        """The concurrency bound: the requested one, or what the descriptor limit allows."""
        return self._capacity

    @property
    def remote(self) -> bool:
        return False

    async def prepare(
        self,
        plan: Plan,
        environ: Mapping[str, str],
        *,
        model_server_url: str | None = None,
        job_env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Nothing to reach: the run's own checks cover this machine."""
        return []

    async def execute(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        """Run the job here."""
        return await run_job(spec, ctx)

    async def aclose(self) -> None:
        return None


OnResult = Callable[[JobOutcome], Awaitable[None] | None]


async def schedule(
    jobs: Sequence[JobSpec],
    executor: Executor,
    ctx: JobContext,
    on_result: OnResult,
) -> None:
    """Run ``jobs`` in order, at most ``executor.capacity`` at once.

    Each outcome is handed to ``on_result`` (which saves it) as soon as it arrives, before
    its worker takes the next job (a remote executor's next job is sent first, then the
    outcome saved: see ``worker``), and is not kept here: a run's memory must not grow with
    its transcripts. When ``ctx.stop`` fires, nothing new starts; running jobs stop and
    come back cancelled (or failed, for a run limit); jobs never started are cancelled.
    """
    delivered: set[int] = set()
    save_lock = asyncio.Lock()
    queue = iter(jobs)  # shared by the workers: each next() hands out the next job in order

    async def deliver(outcome: JobOutcome) -> None:
        async with save_lock:
            delivered.add(outcome.spec.number)
            maybe = on_result(outcome)
            if maybe is not None:
                await maybe

    async def run_one(spec: JobSpec) -> JobOutcome:
        try:
            return await executor.execute(spec, ctx)
        except Exception as exc:  # a harness bug must not take the other jobs down
            return JobOutcome(
                spec=spec,
                status="failed",
                failed=True,
                error=f"internal error: {type(exc).__name__}: {exc}",
                error_kind="internal",
            )

    async def worker() -> None:
        # A fixed pool of workers instead of a task (and a semaphore race against the stop
        # event) per job: the bound holds by construction and a job costs no extra tasks.
        for spec in queue:
            if ctx.stop.event.is_set():
                return  # never started: delivered as cancelled below
            outcome = await run_one(spec)
            while (ahead := _hand_on(outcome)) is not None:
                # A remote job's hand-off is a round trip to a worker that idles meanwhile:
                # the next job goes out first, then this one is saved (one outcome in
                # memory per slot at most). Only after a clean completion, with its tokens
                # already counted against the run's budget, so no stop it causes is late.
                running = asyncio.ensure_future(run_one(ahead))
                await asyncio.sleep(0)  # let it reach its worker before the save below
                try:
                    await deliver(outcome)
                except BaseException:
                    running.cancel()
                    raise
                outcome = await running
            await deliver(outcome)

    def _hand_on(outcome: JobOutcome) -> JobSpec | None:
        if not executor.remote or outcome.status != "completed" or outcome.failed:
            return None
        if outcome.tokens:
            ctx.on_tokens(outcome.spec, outcome.tokens)
        if ctx.stop.event.is_set():
            return None
        return next(queue, None)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(max(executor.capacity, 1), len(jobs))):
            group.create_task(worker())
    for spec in jobs:
        if spec.number not in delivered:
            await deliver(cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind))
