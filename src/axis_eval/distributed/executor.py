"""The Dask executor: ``axis run``'s jobs on the workers of a Dask cluster.

``axis run`` stays the one brain: it plans, orders, bounds, scores and writes the report;
this executor sends each job to a worker as its spec (plus the run's ticket and bundle, sent
once per worker) and hands back its outcome. Dask cannot cancel a running task, so a run
stops through its own channel: an event every worker listens on (:mod:`.worker`). A job
whose worker dies is started once more elsewhere (Dask reschedules it; the job's attempt
record on the scheduler counts the starts); past that it is an infrastructure failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import uuid
from collections.abc import Mapping
from typing import Any

from axis_eval._util.clock import now_iso
from axis_eval._version import __version__
from axis_eval.config.models import LoadedConfig
from axis_eval.distributed import _dask, names
from axis_eval.distributed.bundle import Bundle, build_bundle
from axis_eval.distributed.caches import plan_caches
from axis_eval.distributed.cluster import Cluster, connect
from axis_eval.distributed.placement import Placement
from axis_eval.distributed.ticket import RunTicket
from axis_eval.errors import PreflightError
from axis_eval.execute.job import JobContext, cancelled_outcome, infrastructure_outcome
from axis_eval.execute.models import JobOutcome
from axis_eval.pipeline.checks import mcp_unset, unique_agents
from axis_eval.planning.models import JobSpec, Plan

__all__ = ["DaskExecutor"]

log = logging.getLogger(__name__)

STOP_SEND_S = 10.0
"""How long telling the workers to stop may take (a scheduler that does not answer in
that time is gone, and its workers' jobs with it)."""
REFRESH_S = 2.0
"""How often the live workers are looked up again while jobs are placed."""
SLOT = "slot"
"""The worker resource a job takes one of (``dask worker --resources slot=N``)."""


class DaskExecutor:
    """Runs jobs on a Dask cluster (an :class:`~axis_eval.execute.executor.Executor`).

    Args:
        loaded: the run's config (its folder becomes the bundle).
        scheduler: the scheduler's address; None: start a local cluster of ``workers``.
        workers: worker processes of the local cluster (default: one per core).
        concurrency: the global cap on jobs at once (``--concurrency``).
        grace_s: SIGTERM-to-SIGKILL time for the agents, as locally.
        score: run the deterministic checks on the workers (the judges run here).
    """

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        concurrency: int = 15,
        grace_s: float = 5.0,
        score: bool = True,
    ) -> None:
        self.loaded = loaded
        self.scheduler = scheduler
        self.workers = workers
        self.concurrency = concurrency
        self.grace_s = grace_s
        self.score = score
        self._cluster: Cluster | None = None
        self._bundle: Bundle | None = None
        self._bundle_future: Any = None
        self._ticket: RunTicket | None = None
        self._specs: dict[int, JobSpec] = {}
        self._ctx: JobContext | None = None
        self._watch: asyncio.Task[None] | None = None
        self._closed = False
        self._placement = Placement(concurrency)
        self._plan: Plan | None = None
        self._checks: set[asyncio.Task[None]] = set()
        """Pre-flight checks of workers that joined during the run."""
        self._refreshed = 0.0

    @property
    def capacity(self) -> int:
        """Jobs out at once (:attr:`.placement.Placement.capacity`)."""
        return self._placement.capacity

    @property
    def slots(self) -> dict[str, int]:
        """The slots of each worker the run uses (pre-flight's, then the live ones)."""
        return self._placement.slots

    @property
    def remote(self) -> bool:
        """A scheduler's workers may be anywhere; a local cluster's are on this machine
        (and share its environment and agent CLIs, which ``axis run`` checks as usual)."""
        return self.scheduler is not None

    @property
    def address(self) -> str | None:
        """The scheduler's address once connected."""
        return self._cluster.address if self._cluster else None

    # ------------------------------------------------------------------ pre-flight

    async def prepare(
        self,
        plan: Plan,
        environ: Mapping[str, str],
        *,
        model_server_url: str | None = None,
        job_env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """Connect (or start the local cluster), send the bundle, and check every worker.

        Called after ``axis run``'s own pre-flight fetched the plan's git sources: the
        bundle carries the cache folders its jobs read (:func:`.caches.plan_caches`).

        Raises:
            PreflightError: no scheduler, no worker, no slot, or a worker that cannot run
                the plan (each named with what it lacks).
        """
        self._cluster = await connect(self.scheduler, self.workers, self.concurrency)
        client = self._cluster.client
        config_dir = self.loaded.config_dir
        caches = plan_caches(plan, config_dir)
        self._bundle = await asyncio.to_thread(build_bundle, config_dir, caches)
        from axis_eval.distributed import attempts  # Dask is imported on first use

        # Three independent trips to the scheduler, made at once.
        self._bundle_future, _, workers = await asyncio.gather(
            client.scatter(self._bundle.data, broadcast=True, hash=False),
            attempts.register(client),
            self._cluster.workers(),
        )
        self._ticket = self._make_ticket(plan, environ, model_server_url, job_env or {})
        found = {address: int(res.get(SLOT, 0)) for address, res in workers.items()}
        self._placement.start(found)
        self._plan = plan
        warnings = [
            f"Dask worker {address} advertises no `{SLOT}` resource: it gets no jobs "
            f"(start it with --resources {SLOT}=N)"
            for address, n in found.items()
            if n <= 0
        ]
        if not self.slots:
            raise PreflightError(
                f"no Dask worker at {self._cluster.address} advertises the `{SLOT}` resource",
                hint=f"start workers with `dask worker ADDRESS --nthreads N --resources {SLOT}=N`",
            )
        facts = await self._check_workers(plan, list(self.slots))
        problems = [f"worker {f['worker']}: {p}" for f in facts for p in f["problems"]]
        if problems:
            raise PreflightError(
                "the Dask cluster cannot run this plan:\n  " + "\n  ".join(problems),
                hint="install the same axis-eval and the pinned agent CLIs on every worker "
                "(`axis agents install …`), and export the variables its agents and MCP "
                "servers need there",
            )
        warnings.extend(f"worker {f['worker']}: {w}" for f in facts for w in f["warnings"])
        return warnings

    def _make_ticket(
        self,
        plan: Plan,
        environ: Mapping[str, str],
        model_server_url: str | None,
        job_env: Mapping[str, str],
    ) -> RunTicket:
        assert self._bundle is not None
        loaded = self.loaded
        return RunTicket(
            token="",  # set by the first job: the run's token is made after pre-flight
            version=__version__,
            config=loaded.config.model_dump(mode="json", by_alias=True, exclude_unset=True),
            config_file=os.path.relpath(loaded.path, loaded.config_dir),
            config_dir=loaded.config_dir,
            digest=self._bundle.digest,
            grace_s=self.grace_s,
            score=self.score,
            added_env=dict(environ),
            extra_env=dict(job_env),
            model_server_url=model_server_url,  # pre-flight checks each worker reaches it
        )

    async def _check_workers(self, plan: Plan, addresses: list[str]) -> list[dict[str, Any]]:
        from axis_eval.distributed.worker import preflight_task

        assert self._cluster is not None and self._ticket is not None
        agents = [a.model_dump(mode="json") for a in unique_agents(plan)]
        modes = sorted({job.sandbox.mode for job in plan.jobs})
        # ${VAR} in MCP headers and env values that no job's own `env` sets: each worker's
        # environment must (the values stay there).
        mcp = [list(item) for item in mcp_unset(plan, {})]
        token = f"preflight-{uuid.uuid4().hex}"  # its own: runs may share a cluster
        ticket = self._ticket_for(token)
        futures = [
            self._cluster.client.submit(
                preflight_task, ticket, self._bundle_future, agents, modes, mcp,
                workers=[address], allow_other_workers=False, pure=False,
                key=f"axis-{token}-{address}",
            )
            for address in addresses
        ]  # fmt: skip
        try:
            done = await asyncio.gather(*futures, return_exceptions=True)
        finally:
            await self._forget(token)
        results: list[dict[str, Any]] = []
        for address, result in zip(addresses, done, strict=True):
            if isinstance(result, BaseException):  # it could not even run the check
                problem = f"its pre-flight task failed ({type(result).__name__}: {result})"
                hint = " (is the same axis-eval installed there, and on the scheduler?)"
                results.append({"worker": address, "problems": [problem + hint], "warnings": []})
            else:
                results.append(result)
        return results

    def _ticket_for(self, token: str, ctx: JobContext | None = None) -> RunTicket:
        assert self._ticket is not None
        ticket = dataclasses.replace(self._ticket, token=token)
        if ctx is None:
            return ticket
        return dataclasses.replace(
            ticket,
            grace_s=ctx.grace_s,
            extra_env=dict(ctx.extra_env),
            model_server_url=ctx.model_server_url,
            score=ctx.scorer is not None,
        )

    # ------------------------------------------------------------------ jobs

    async def execute(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        """Run ``spec`` on a worker, then score it here."""
        if self._cluster is None:
            raise RuntimeError("DaskExecutor.prepare() was not called")
        if self._ctx is None:
            self._start(ctx)
        if ctx.stop.event.is_set():
            return cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind)
        outcome = await self._run_remote(spec, ctx)
        if ctx.scorer is not None and outcome.status == "completed" and not outcome.failed:
            ctx.on_phase(spec, "scoring")
            outcome.score = await ctx.scorer.score(outcome, None)
        return outcome

    def _start(self, ctx: JobContext) -> None:
        assert self._cluster is not None
        self._ctx = ctx
        self._ticket = self._ticket_for(ctx.run_token, ctx)
        self._cluster.client.subscribe_topic(names.events(ctx.run_token), self._on_event)
        self._watch = asyncio.ensure_future(self._broadcast_stop(ctx))

    async def _run_remote(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        from distributed import KilledWorker
        from distributed.client import FutureCancelledError

        from axis_eval.distributed.worker import MAX_ATTEMPTS, run_job_task

        assert self._cluster is not None and self._ticket is not None
        client = self._cluster.client
        token = ctx.run_token
        started = now_iso()
        self._specs[spec.number] = spec
        try:
            where = await self._place()
            placed: dict[str, Any] = (
                # Loose: a lost worker's job re-runs elsewhere.
                {"workers": [where], "allow_other_workers": True} if where is not None else {}
            )
            future = client.submit(
                run_job_task,
                spec.model_dump_json(),
                self._ticket,
                self._bundle_future,
                key=names.task_key(token, spec.number),
                resources={SLOT: 1},
                pure=False,
                retries=0,
                **placed,
            )
            try:
                text: str = await future
            finally:
                if where is not None:
                    self._placement.release(where)
            return JobOutcome.model_validate_json(text)
        except KilledWorker as exc:
            reason = f"its worker was lost {MAX_ATTEMPTS} times: {exc}"
            return self._infrastructure(spec, started, reason, attempts=MAX_ATTEMPTS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Nobody here cancels a job's task: a cancelled one, or a broken connection, means
            # the scheduler is gone, and the run stops (cancelled runs re-run on --resume).
            if isinstance(exc, FutureCancelledError | OSError) or self._cluster.lost():
                why = getattr(exc, "reason", None) or exc
                reason = f"the Dask cluster at {self._cluster.address} was lost ({why})"
                ctx.stop.trigger(reason, "infrastructure")
                outcome = cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind)
                outcome.started_at = started
                return outcome
            return self._infrastructure(
                spec, started, f"the task failed on its worker: {exc}", attempts=1
            )
        finally:
            self._specs.pop(spec.number, None)

    async def _place(self) -> str | None:
        """The worker for the next job (:class:`.placement.Placement`), on the live
        workers, looked up again every :data:`REFRESH_S`; a worker that joined meanwhile is
        checked in the background before it takes jobs."""
        assert self._cluster is not None
        now = asyncio.get_running_loop().time()
        if now - self._refreshed >= REFRESH_S:
            self._refreshed = now
            with contextlib.suppress(Exception):
                live = await self._cluster.workers(wait=False)
                fresh = self._placement.refresh({a: int(r.get(SLOT, 0)) for a, r in live.items()})
                for address in fresh:
                    check = asyncio.ensure_future(
                        self._check_late(address, int(live[address][SLOT]))
                    )
                    self._checks.add(check)
                    check.add_done_callback(self._checks.discard)
        return self._placement.place()

    async def _check_late(self, address: str, slots: int) -> None:
        """Pre-flight for a worker that joined during the run; it takes jobs if it passes."""
        assert self._plan is not None
        try:
            facts = (await self._check_workers(self._plan, [address]))[0]
        except Exception as exc:  # the cluster is going: nothing to add
            log.warning("could not check the new Dask worker %s: %s", address, exc)
            return
        if facts["problems"]:
            problems = "; ".join(facts["problems"])
            log.warning("Dask worker %s joined but gets no jobs of this run: %s", address, problems)
        elif not self._placement.admit(address, slots):
            log.warning(
                "Dask worker %s joined but gets no jobs of this run: its %d slots would let "
                "more than --concurrency %d jobs run at once",
                address, slots, self.concurrency,
            )  # fmt: skip

    @staticmethod
    def _infrastructure(spec: JobSpec, started: str, reason: str, *, attempts: int) -> JobOutcome:
        outcome = infrastructure_outcome(spec, reason, started)
        outcome.attempts = attempts
        return outcome

    def _on_event(self, event: Any) -> None:
        """A worker's report of a job's phase or tokens (``(time, message)``)."""
        ctx = self._ctx
        message = event[1] if isinstance(event, tuple | list) and len(event) == 2 else event
        if ctx is None or not isinstance(message, dict):
            return
        spec = self._specs.get(message.get("job", -1))
        if spec is None:
            return
        if "phase" in message:
            ctx.on_place(spec, str(message.get("worker", "")))
            ctx.on_phase(spec, message["phase"])
        elif isinstance(message.get("tokens"), int):
            verdict = ctx.on_tokens(spec, message["tokens"])
            if verdict is not None:
                ctx.stop.trigger(verdict[1], verdict[0])

    async def _broadcast_stop(self, ctx: JobContext) -> None:
        """When the run stops (a signal, a run limit, a lost cluster), every worker stops."""
        await ctx.stop.event.wait()
        assert self._cluster is not None
        client = self._cluster.client
        if self._cluster.lost():
            return  # no scheduler to tell: its workers' jobs went with it (or stop on release)
        try:
            reason = {"reason": ctx.stop.reason, "kind": ctx.stop.kind}
            async with asyncio.timeout(STOP_SEND_S):
                await _dask.set_variable(names.stop_reason(ctx.run_token), reason, client)
                await _dask.set_event(names.stop_event(ctx.run_token), client)
        except Exception as exc:  # the cluster is gone: its jobs went with it
            log.warning("could not tell the Dask workers to stop: %s", exc)

    # ------------------------------------------------------------------ the end

    async def _forget(self, token: str) -> None:
        from axis_eval.distributed.worker import forget_run

        if self._cluster is None or self._cluster.lost():
            return
        client = self._cluster.client
        with contextlib.suppress(Exception):
            # Stop it (again) first: each worker's listener of the run then ends on its own.
            if self._ctx is None or token != self._ctx.run_token or not self._ctx.stop.reason:
                done = {"reason": "The run is over", "kind": "cancelled"}
                await _dask.set_variable(names.stop_reason(token), done, client)
            await _dask.set_event(names.stop_event(token), client)
            await asyncio.wait_for(client.run(forget_run, token), 30)

    async def aclose(self) -> None:
        """End the run on every worker, then disconnect (and stop a local cluster)."""
        if self._closed or self._cluster is None:
            return
        self._closed = True
        for check in list(self._checks):
            check.cancel()
        try:
            if self._ctx is not None and not self._cluster.lost():
                # Every job is back (or the run failed): stopping the run on the workers ends
                # their listeners and whatever a failed run left running there.
                self._ctx.stop.trigger("The run is over", "cancelled")
            if self._watch is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(self._watch), 10)
                self._watch.cancel()
                with contextlib.suppress(BaseException):
                    await self._watch
            if self._ctx is not None:
                with contextlib.suppress(Exception):
                    self._cluster.client.unsubscribe_topic(names.events(self._ctx.run_token))
                await self._forget(self._ctx.run_token)
        finally:
            await self._cluster.close()
