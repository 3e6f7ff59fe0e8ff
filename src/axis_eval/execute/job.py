"""One job: setup → spawn → capture → score (seam) → teardown, returning a JobOutcome.

Saving is the caller's step: the outcome is serializable, so the scheduler writes it to the
report the moment it arrives, wherever the job ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from axis_eval._types import ErrorKind
from axis_eval._util.clock import now_iso
from axis_eval.adapters.base import AdapterInput, AgentAdapter
from axis_eval.adapters.hooks import run_hook
from axis_eval.adapters.mcp_files import interpolate_servers
from axis_eval.execute.artifacts import collect_artifacts
from axis_eval.execute.lifecycle import run_phase
from axis_eval.execute.machine import MachineState
from axis_eval.execute.models import JobOutcome, MachineLoad
from axis_eval.execute.process import ManagedProcess, ProcessSpec, Spawner, spawn
from axis_eval.execute.sandbox.base import JobSandbox, SandboxUnavailable
from axis_eval.execute.sandbox.sandboxes import Sandboxes
from axis_eval.execute.supervise import RunControl, run_agent
from axis_eval.execute.workspace import (
    JobDirs,
    build_env,
    create_job_dirs,
    lifecycle_env,
    released_full,
    remove_released,
)
from axis_eval.planning.models import JobSpec
from axis_eval.progress import Phase
from axis_eval.scoring.models import ScoreResult


class Scorer(Protocol):
    """The scoring seam: called after capture, before teardown, while the workspace exists.

    Order for a completed run: ``run_checks`` (deterministic rubric commands), then artifact
    capture, then ``score`` (the judges; an agent judge may change files, so it runs last).
    """

    async def run_checks(
        self, outcome: JobOutcome, workspace: Path, sandbox: JobSandbox | None = None
    ) -> Any:
        """Run the rubric's deterministic checks in the workspace (kept for ``score``), in
        the job's ``sandbox`` (None: on the host)."""

    async def score(self, outcome: JobOutcome, workspace: Path | None) -> ScoreResult | None:
        """A score for a finished run (withheld when a judge failed), or None when unscored.
        ``workspace``: None when the job ran elsewhere (its checks then came back in
        ``outcome.checks``).

        A scorer may also set ``outcome.verdicts`` so the run can be re-scored later.
        """


@dataclass
class StopSignal:
    """Why the whole run is stopping: set once, seen by every job."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    reason: str = "Run cancelled"
    kind: ErrorKind = "cancelled"

    def trigger(self, reason: str, kind: ErrorKind = "cancelled") -> None:
        """Stop everything (first reason wins)."""
        if not self.event.is_set():
            self.reason = reason
            self.kind = kind
            self.event.set()


@dataclass
class JobContext:
    """What the local side gives every job: loaded adapters, controls and callbacks."""

    run_token: str
    adapters: Mapping[str, AgentAdapter[Any]]
    parent_env: Mapping[str, str]
    stop: StopSignal
    grace_s: float = 5.0
    scorer: Scorer | None = None
    on_phase: Callable[[JobSpec, Phase], None] = lambda job, phase: None
    on_tokens: Callable[[JobSpec, int], tuple[ErrorKind, str] | None] = lambda job, n: None
    on_place: Callable[[JobSpec, str], None] = lambda job, where: None
    """Where a job runs, when an executor sends it elsewhere (a Dask worker's address)."""
    tmp_base: str | None = None
    model_server_url: str | None = None
    """The embedded scripted model server, when the config asks for one."""
    extra_env: Mapping[str, str] = field(default_factory=dict)
    """Variables every job gets on top of its own (the scripted server's proxy trap)."""
    spawner: Spawner = spawn
    """What starts a ``sandbox: none`` job's processes (tests pass their own)."""
    sandboxes: Sandboxes | None = None
    """Opens each job's sandbox; None: one made for this context (``auto`` resolved here)."""
    machine: MachineState = field(default_factory=MachineState)
    """The load and CPU count each outcome records (read at most once a second)."""

    def __post_init__(self) -> None:
        if self.sandboxes is None:
            self.sandboxes = Sandboxes(self.run_token, spawner=self.spawner)


def cancelled_outcome(spec: JobSpec, reason: str, kind: ErrorKind = "cancelled") -> JobOutcome:
    """The outcome of a job that never started."""
    return JobOutcome(
        spec=spec,
        status="cancelled",
        failed=False,
        error=reason,
        error_kind=kind,
    )


def _token_gate(spec: JobSpec, ctx: JobContext) -> Callable[[int], tuple[ErrorKind, str] | None]:
    def gate(total: int) -> tuple[ErrorKind, str] | None:
        if spec.token_limit is not None and total >= spec.token_limit:
            return ("token_limit", f"Scenario token limit reached ({spec.token_limit} tokens)")
        return ctx.on_tokens(spec, total)

    return gate


async def run_job(spec: JobSpec, ctx: JobContext) -> JobOutcome:
    """Run one job start to finish; never raises for anything the job itself did."""
    if ctx.stop.event.is_set():
        return cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind)
    marker = f"{ctx.run_token}/{spec.number}"
    adapter = ctx.adapters[spec.agent.adapter]
    dirs = create_job_dirs(ctx.tmp_base)
    started = now_iso()
    load, cpus = ctx.machine.read()
    assert ctx.sandboxes is not None  # __post_init__
    try:
        try:
            box = await ctx.sandboxes.open(spec.sandbox, dirs, marker, spec.config_dir)
        except SandboxUnavailable as exc:
            outcome = infrastructure_outcome(spec, str(exc), started)
        else:
            try:
                outcome = await _run(spec, ctx, adapter, dirs, box, marker, started)
                outcome.sandbox = box.kind
            finally:
                await box.close()
        end_load, end_cpus = ctx.machine.read()
        outcome.machine = MachineLoad(
            load_start=load, load_end=end_load, cpus_start=cpus, cpus_end=end_cpus
        )
        return outcome
    finally:
        if not dirs.release():  # left empty: removed with the others at the run's end
            await asyncio.to_thread(dirs.remove)
        elif released_full():
            await asyncio.to_thread(remove_released)


def infrastructure_outcome(spec: JobSpec, reason: str, started: str) -> JobOutcome:
    """A job whose sandbox could not start: failed, and not the agent's doing."""
    return JobOutcome(
        spec=spec,
        status="failed",
        failed=True,
        error=reason,
        error_kind="infrastructure",
        started_at=started,
        ended_at=now_iso(),
    )


async def _run(
    spec: JobSpec,
    ctx: JobContext,
    adapter: AgentAdapter[Any],
    dirs: JobDirs,
    box: JobSandbox,
    marker: str,
    started: str,
) -> JobOutcome:
    isolation = (
        await run_hook(adapter.isolation_env, dirs.work_dir, dirs.home_dir)
        if adapter.isolation_env
        else {}
    )
    env = build_env(
        spec,
        dirs,
        ctx.parent_env,
        adapter_env=(*adapter.required_env, *adapter.optional_env),
        isolation=isolation,
    )
    env.update(ctx.extra_env)
    phase_args: dict[str, Any] = (
        {
            "cwd": dirs.workspace,
            "env": lifecycle_env(spec, env),
            "copy_root": Path(spec.config_dir),
            "marker": marker,
            "sandbox": box,
            "grace_s": ctx.grace_s,
        }
        if spec.scenario.setup or spec.scenario.teardown
        else {}  # only _teardown() and the setup branch read it, and both need actions
    )
    setup_notes: str | None = None
    if spec.scenario.setup:
        ctx.on_phase(spec, "setup")
        setup = await run_phase(
            spec.scenario.setup,
            phase="setup",
            notes=dirs.root / "setup-notes.md",
            stop=ctx.stop.event,
            **phase_args,
        )
        setup_notes = setup.notes
        if ctx.stop.event.is_set():
            # Stopped during setup: whatever it created is released by the teardown.
            outcome = cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind)
            outcome.started_at = started
            outcome.setup_output = setup_notes
            outcome.teardown_output = await _teardown(spec, ctx, dirs, phase_args)
            outcome.ended_at = now_iso()
            outcome.workspace = dirs.work_dir
            return outcome
        if setup.error:
            teardown = await _teardown(spec, ctx, dirs, phase_args)
            return JobOutcome(
                spec=spec,
                status="failed",
                failed=True,
                error=f"Setup failed: {setup.error}",
                error_kind="setup",
                started_at=started,
                ended_at=now_iso(),
                setup_output=setup_notes,
                teardown_output=teardown,
                workspace=dirs.work_dir,
            )
    if ctx.stop.event.is_set():
        return cancelled_outcome(spec, ctx.stop.reason, ctx.stop.kind)
    ctx.on_phase(spec, "running")
    outcome = JobOutcome(spec=spec, status="completed", failed=False, workspace=dirs.work_dir)
    await _run_agent(spec, ctx, adapter, dirs, env, outcome, box)
    _settle(outcome, ctx)
    outcome.setup_output = setup_notes
    scoring = ctx.scorer is not None and outcome.status == "completed"
    if scoring and ctx.scorer is not None:
        ctx.on_phase(spec, "scoring")
        await ctx.scorer.run_checks(outcome, dirs.workspace, box)
    # The host's workspace now shows what the agent left.
    outcome.warnings.extend(await box.after_agent())
    if spec.artifacts:
        outcome.artifacts = collect_artifacts(dirs.workspace, spec.artifacts)
    if scoring and ctx.scorer is not None:
        outcome.score = await ctx.scorer.score(outcome, dirs.workspace)
    outcome.teardown_output = await _teardown(spec, ctx, dirs, phase_args)
    return outcome


async def _run_agent(
    spec: JobSpec,
    ctx: JobContext,
    adapter: AgentAdapter[Any],
    dirs: JobDirs,
    env: dict[str, str],
    outcome: JobOutcome,
    box: JobSandbox,
) -> None:
    """Run the agent in the job's sandbox; the supervisor writes what it did straight into
    ``outcome``."""

    async def start(process: ProcessSpec) -> ManagedProcess:
        await box.before_agent()  # after the adapter's prepare wrote its files
        return await box.spawn(process)

    inp = AdapterInput(
        prompt=spec.scenario.prompt,
        agent=spec.agent,
        workspace=dirs.work_dir,
        home=dirs.home_dir,
        env=dict(env),  # the adapter's prepare may add to it; teardown keeps the job's own
        # ${VAR} in MCP headers/env from the parent environment (pre-flight checked them).
        mcp_servers=interpolate_servers(
            spec.mcp_servers, {**ctx.parent_env, **spec.env_set}, strict=False
        ),
        skills=list(spec.skills),
        time_limit_s=spec.time_limit_s,
        endpoint=spec.agent.endpoint or ctx.model_server_url,
    )
    control = RunControl(
        marker=f"{ctx.run_token}/{spec.number}",
        grace_s=ctx.grace_s,
        cancel=ctx.stop.event,
        on_tokens=_token_gate(spec, ctx),
        spawner=start,
        output=spec.output_limit,
    )
    control.cancel_reason = ctx.stop.reason
    await run_agent(adapter, inp, control, into=outcome)
    if outcome.transcript is not None and spec.agent.endpoint is None and ctx.model_server_url:
        # Handed the scripted server: whatever usage or cost it reports spent nothing.
        outcome.transcript.cost_simulated = True


def _settle(outcome: JobOutcome, ctx: JobContext) -> None:
    """The job's status from its run: a cancel takes the run's stop reason and kind; the
    job failed when the run did, or ended with an error and no answer."""
    if outcome.error_kind == "cancelled" and ctx.stop.event.is_set():
        outcome.error, outcome.error_kind = ctx.stop.reason, ctx.stop.kind
    if outcome.error_kind == "cancelled":
        outcome.status = "cancelled"
    elif outcome.failed or (outcome.error is not None and outcome.result is None):
        outcome.status = "failed"
    else:
        outcome.status = "completed"
    outcome.failed = outcome.status == "failed"


async def _teardown(
    spec: JobSpec, ctx: JobContext, dirs: JobDirs, phase_args: dict[str, Any]
) -> str | None:
    if not spec.scenario.teardown:
        return None
    ctx.on_phase(spec, "teardown")
    result = await run_phase(
        spec.scenario.teardown,
        phase="teardown",
        notes=dirs.root / "teardown-notes.md",
        **phase_args,
    )
    notes = result.notes or ""
    if result.error:
        notes = (notes + "\n\n" if notes else "") + f"**Teardown failed:** {result.error}"
    return notes or None
