"""The worker's side of a Dask run: each job task rebuilds its context and runs the job.

The first task of a run on a worker (pre-flight's, or a job's) unpacks the run's bundle,
rebuilds the config from the ticket, starts the run's sentinel on this worker (if the worker
dies, even by SIGKILL, it kills the run's agents here: no second copy of a job runs on after
its re-run starts elsewhere) and listens on the run's stop event. Later tasks reuse all of
it; ``axis run`` ends it with :func:`forget_run` on every worker.

A job runs with the worker's own environment (its API keys: secrets never travel from
``axis run``), plus the ticket's placeholder keys. What it sends back is its outcome, with
the values of the worker's secret variables redacted (and its MCP header and env values, as
filled in from the worker's environment), and its deterministic check verdicts; the judges
run in ``axis run``.

The GitHub skills and ``copy`` repositories a job reads come in the bundle (``axis run``'s
pre-flight fetched them; :mod:`.caches`), under ``.axis`` of the unpacked config folder,
which the job's rerooted ``config_dir`` points to: a worker never fetches them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from distributed import get_client, get_worker

from axis_eval._types import ErrorKind
from axis_eval._util.clock import now_iso
from axis_eval._version import __version__
from axis_eval.adapters.base import AgentAdapter
from axis_eval.config.models import Config, LoadedConfig
from axis_eval.distributed import _dask, attempts, names
from axis_eval.distributed.bundle import prune, unpack
from axis_eval.distributed.ticket import RunTicket
from axis_eval.errors import AxisError
from axis_eval.execute.job import JobContext, StopSignal, infrastructure_outcome, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import Sentinel
from axis_eval.execute.sandbox.base import JobSandbox
from axis_eval.execute.sandbox.sandboxes import Sandboxes
from axis_eval.execute.workspace import missing_env, remove_released
from axis_eval.pipeline.checks import job_secrets, load_agent_adapters
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.progress import Phase
from axis_eval.redact import Redactor
from axis_eval.scoring.models import ScoreResult

__all__ = ["MAX_ATTEMPTS", "forget_run", "preflight_task", "reroot", "run_job_task"]

MAX_ATTEMPTS = 2
"""A job is started at most twice: once, and once more after its worker was lost."""
RELEASE_POLL_S = 1.0
"""How often a job looks whether ``axis run`` still wants it (:func:`_watch_release`)."""
TOKEN_EVERY_S = 0.5
"""How often a job's growing token count is reported to ``axis run`` (at most)."""


def reroot(data: Any, old: str, new: str) -> Any:
    """``data`` (JSON-like) with every string that is the path ``old`` or lies under it moved
    to ``new``: a spec's folders as the worker's copy of the config folder has them."""
    if isinstance(data, str):
        base = old.rstrip("/") or "/"
        if data.rstrip("/") == base:
            return new
        if data.startswith(base + "/"):
            return new + data[len(base) :]
        return data
    if isinstance(data, list):
        return [reroot(item, old, new) for item in data]
    if isinstance(data, dict):
        return {key: reroot(value, old, new) for key, value in data.items()}
    return data


class WorkerRun:
    """One run as this worker holds it."""

    def __init__(self, ticket: RunTicket, root: Path) -> None:
        self.ticket = ticket
        self.root = root
        config = Config.model_validate(ticket.config)
        self.loaded = LoadedConfig(
            config=config, path=str(root / ticket.config_file), config_dir=str(root)
        )
        self.stop = StopSignal()
        self.env = {**os.environ, **ticket.added_env}
        self.adapters: dict[str, AgentAdapter[Any]] = {}
        self.sandboxes = Sandboxes(
            ticket.token, hidden=[str(root / ".axis")], parent_home=os.environ.get("HOME")
        )
        self.sentinel: Sentinel | None = None
        self.listener: asyncio.Task[None] | None = None
        self.active = 0
        """Its jobs running here now."""

    def adapter(self, agent: AgentSpec) -> AgentAdapter[Any]:
        """The agent's adapter, loaded once per run.

        Raises:
            PreflightError: it cannot load here (a missing CLI, a broken custom adapter).
        """
        if agent.adapter not in self.adapters:
            self.adapters.update(load_agent_adapters([agent], self.loaded))
        return self.adapters[agent.adapter]

    async def close(self) -> None:
        if self.listener is not None:
            # axis run sets the stop event before it forgets a run, so the listener ends on
            # its own (cancelling a waiting Dask event logs an error on the worker).
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self.listener), 5)
            self.listener.cancel()
            with contextlib.suppress(BaseException):
                await self.listener
        try:
            await self.sandboxes.aclose()
        finally:
            if self.sentinel is not None:
                await self.sentinel.close()


_digests: dict[str, str] = {}
"""The bundle digest of each run this worker holds (never pruned while it does)."""
_runs: dict[str, asyncio.Task[WorkerRun]] = {}
"""This worker's runs by token (a task: the jobs that arrive together share one opening)."""


def _bundles() -> Path:
    return Path(get_worker().local_directory) / "axis-bundles"


async def _open(ticket: RunTicket, bundle: bytes) -> WorkerRun:
    _digests[ticket.token] = ticket.digest
    root = await asyncio.to_thread(unpack, bundle, ticket.digest, _bundles())
    # Bundles of earlier runs go, but the few most recently used (and those runs here use).
    await asyncio.to_thread(prune, _bundles(), set(_digests.values()))
    run = WorkerRun(ticket, root)
    run.sentinel = await Sentinel.start(ticket.token)
    run.listener = asyncio.create_task(_listen(run, get_client()))
    return run


async def _run_for(ticket: RunTicket, bundle: bytes) -> WorkerRun:
    task = _runs.get(ticket.token)
    if task is None or (task.done() and task.exception() is not None):
        task = _runs[ticket.token] = asyncio.ensure_future(_open(ticket, bundle))
    return await asyncio.shield(task)


async def _listen(run: WorkerRun, client: Any) -> None:
    """Stop this worker's jobs of the run when ``axis run`` stops it."""
    token = run.ticket.token
    await _dask.wait_event(names.stop_event(token), client)
    data: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        data = await _dask.get_variable(names.stop_reason(token), client, timeout=5)
    kind = cast(ErrorKind, data.get("kind", "cancelled"))
    run.stop.trigger(str(data.get("reason", "Run cancelled")), kind)


async def forget_run(token: str) -> bool:
    """End the run here (``client.run`` on every worker at the run's end); whether it held it."""
    task = _runs.pop(token, None)
    _digests.pop(token, None)
    if task is None:
        return False
    with contextlib.suppress(BaseException):
        run = await task
        await run.close()
    await asyncio.to_thread(remove_released)  # its jobs' empty folders (a worker lives on)
    return True


class WorkerChecks:
    """The scorer seam on a worker: the deterministic checks only; the judges run where
    ``axis run`` is, on the outcome sent back."""

    def __init__(self, run: WorkerRun, redactor: Redactor) -> None:
        from axis_eval.scoring.scorer import JudgeScorer  # only a scoring run pays for it

        self.inner = JudgeScorer(
            judging=run.loaded.config.judging,
            config_dir=run.loaded.config_dir,
            parent_env=run.env,
            redactor=redactor,
            run_token=run.ticket.token,
            use_cache=False,
        )

    async def run_checks(
        self, outcome: JobOutcome, workspace: Path, sandbox: JobSandbox | None = None
    ) -> Any:
        return await self.inner.run_checks(outcome, workspace, sandbox)

    async def score(self, outcome: JobOutcome, workspace: Path | None) -> ScoreResult | None:
        outcome.checks = self.inner.take_checks(outcome.spec) or {}
        return None


class _Reporter:
    """A job's phases and token counts, to ``axis run``'s live view."""

    def __init__(self, token: str) -> None:
        self.worker = get_worker()
        self.topic = names.events(token)
        self.sent: dict[int, float] = {}

    def phase(self, job: JobSpec, phase: Phase) -> None:
        self._send({"job": job.number, "phase": phase, "worker": self.worker.address})

    def tokens(self, job: JobSpec, total: int) -> tuple[ErrorKind, str] | None:
        now = time.monotonic()
        if now - self.sent.get(job.number, 0.0) >= TOKEN_EVERY_S:
            self.sent[job.number] = now
            self._send({"job": job.number, "tokens": total})
        return None  # the run-level budget is axis run's: it stops the run through the event

    def _send(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            self.worker.log_event(self.topic, message)


async def run_job_task(spec_json: str, ticket: RunTicket, bundle: bytes) -> str:
    """One job on this worker; its outcome as JSON (the spec as ``axis run`` sent it)."""
    worker = get_worker()
    original = JobSpec.model_validate_json(spec_json)
    tried = await attempts.record_start(names.task_key(ticket.token, original.number), worker)
    if len(tried) > MAX_ATTEMPTS:
        lost = ", ".join(tried[:-1])
        outcome = infrastructure_outcome(
            original,
            f"its worker was lost {len(tried) - 1} times ({lost}); it is not started again",
            now_iso(),
        )
        outcome.attempts = len(tried) - 1
        return outcome.model_dump_json()
    started = now_iso()
    try:
        return await _run_here(original, spec_json, ticket, bundle, tried, started)
    except Exception as exc:
        # A bug here, or a broken worker: this job's infrastructure failure, said in words
        # from here (an exception Dask cannot send back, a RecursionError's, would leave
        # axis run waiting for the task forever).
        lines = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {lines[0][:500]}" if lines else type(exc).__name__
        outcome = infrastructure_outcome(
            original, f"the task failed on its worker {worker.address}: {why}", started
        )
        outcome.worker = str(worker.address)
        outcome.attempts = len(tried)
        return outcome.model_dump_json()


async def _run_here(
    original: JobSpec,
    spec_json: str,
    ticket: RunTicket,
    bundle: bytes,
    tried: list[str],
    started: str,
) -> str:
    worker = get_worker()
    try:
        run = await _run_for(ticket, bundle)
        spec = JobSpec.model_validate(
            reroot(json.loads(spec_json), ticket.config_dir, str(run.root))
        )
        adapter = run.adapter(spec.agent)
    except AxisError as exc:
        outcome = infrastructure_outcome(original, f"on worker {worker.address}: {exc}", started)
    else:
        redactor = Redactor.from_env(
            [*adapter.required_env, *spec.env_pass], run.env, job_secrets(spec, run.env)
        )
        reporter = _Reporter(ticket.token)
        ctx = JobContext(
            run_token=ticket.token,
            adapters=run.adapters,
            parent_env=run.env,
            stop=run.stop,
            grace_s=ticket.grace_s,
            scorer=WorkerChecks(run, redactor) if ticket.score else None,
            on_phase=reporter.phase,
            on_tokens=reporter.tokens,
            model_server_url=ticket.model_server_url,
            extra_env=ticket.extra_env,
            sandboxes=run.sandboxes,
        )
        watch = asyncio.ensure_future(
            _watch_release(run, names.task_key(ticket.token, spec.number))
        )
        run.active += 1
        try:
            outcome = await run_job(spec, ctx)
        finally:
            run.active -= 1
            watch.cancel()
        outcome.spec = original
        outcome.workspace = None  # it was on the worker, and is gone
        text = outcome.model_copy(
            update={"worker": str(worker.address), "attempts": len(tried)}
        ).model_dump_json()
        return redactor.json_text(text)
    outcome.worker = str(worker.address)
    outcome.attempts = len(tried)
    return outcome.model_dump_json()


async def _watch_release(run: WorkerRun, key: str) -> None:
    """Stop the run's jobs here when the scheduler lets go of this job's task: ``axis run``
    is gone (killed, even by SIGKILL, or disconnected), so nobody waits for what they do.

    Dask cannot stop a running task; it marks it cancelled on this worker and lets it run.
    """
    state = get_worker().state
    while not run.stop.event.is_set():
        await asyncio.sleep(RELEASE_POLL_S)
        task = state.tasks.get(key)
        if task is None or task.state in ("cancelled", "released", "forgotten"):
            run.stop.trigger("axis run is gone (the scheduler released its jobs)", "cancelled")
            # Nobody will forget this run here: once its jobs are back, this worker does.
            forgetting = asyncio.ensure_future(_forget_when_idle(run))
            _orphaned.add(forgetting)
            forgetting.add_done_callback(_orphaned.discard)
            return


_orphaned: set[asyncio.Future[None]] = set()
"""Runs being forgotten because their ``axis run`` is gone (kept: tasks are weakly held)."""


async def _forget_when_idle(run: WorkerRun) -> None:
    deadline = time.monotonic() + run.ticket.grace_s + 60
    while run.active and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    with contextlib.suppress(Exception):
        await forget_run(run.ticket.token)


def _reach(url: str) -> str | None:
    """Why this worker cannot open a connection to ``url``'s host and port (None: it can)."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=3):
            return None
    except (OSError, ValueError) as exc:
        return str(exc)


async def preflight_task(
    ticket: RunTicket,
    bundle: bytes,
    agents: list[dict[str, Any]],
    modes: list[str],
    mcp: list[list[str]] | None = None,
) -> dict[str, Any]:
    """What this worker lacks to run the plan: ``{"worker", "version", "problems",
    "warnings"}`` (it also unpacks the bundle and opens the run here, for the jobs).

    ``mcp``: ``[server, "headers" or "env", key, variable]`` for each ``${VAR}`` of the
    plan's MCP servers that no job's own ``env`` sets: this worker's environment must.
    """
    worker = get_worker()
    facts: dict[str, Any] = {
        "worker": str(worker.address),
        "version": __version__,
        "problems": [],
        "warnings": [],
    }
    problems: list[str] = facts["problems"]
    if ticket.version != __version__:
        problems.append(f"runs axis-eval {__version__}, while axis run is {ticket.version}")
        return facts
    try:
        run = await _run_for(ticket, bundle)
    except (OSError, ValueError, AxisError) as exc:
        # A full disk, a local directory it cannot write, a bundle that came in damaged:
        # this worker's own problem, named as such (not one failed pre-flight for all).
        problems.append(f"cannot unpack the run's config folder under {_bundles()}: {exc}")
        return facts
    for raw in agents:
        agent = AgentSpec.model_validate(raw)
        try:
            adapter = run.adapter(agent)
        except AxisError as exc:
            problems.append(exc.message + (f" ({exc.hint})" if exc.hint else ""))
            continue
        missing = missing_env(adapter.required_env, run.env)
        if missing:
            problems.append(
                f"the {agent.name!r} agent needs environment variable(s) {', '.join(missing)}, "
                "which are not set on this worker"
            )
    for server, field, key, variable in mcp or []:
        if not run.env.get(variable):
            entry = "header" if field == "headers" else "env"
            problems.append(
                f"MCP server {server!r} {entry} {key!r} uses ${{{variable}}}, which is not set "
                "on this worker"
            )
    if {"auto", "bwrap"} & set(modes):
        from axis_eval.execute.sandbox.probe import bwrap_problem, unbounded_tmpfs_warning

        problem = bwrap_problem()
        if problem is not None and "bwrap" in modes:
            problems.append(f"sandbox bwrap: {problem}")
        elif problem is not None:
            facts["warnings"].append(
                f"sandbox auto: {problem}; this worker runs its jobs UNCONFINED (sandbox none)"
            )
        elif (unbounded := unbounded_tmpfs_warning()) is not None:
            facts["warnings"].append(unbounded)
    if ticket.model_server_url:
        unreachable = _reach(ticket.model_server_url)
        if unreachable:
            problems.append(
                f"cannot reach the scripted model server at {ticket.model_server_url} "
                f"({unreachable}): it listens where axis run is"
            )
    return facts
