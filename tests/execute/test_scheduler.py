"""The scheduler (`execute.executor.schedule`): a fixed pool of `capacity` workers.

The executor here is an in-process implementation of the `Executor` protocol whose jobs
wait on events the test controls (no processes: what is under test is the scheduling).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc

from axis_eval._types import TokenUsage
from axis_eval.config.scenario import Scenario
from axis_eval.execute.executor import schedule
from axis_eval.execute.job import JobContext, StopSignal
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.transcript.models import Transcript

PAYLOAD_BYTES = 4 * 1024 * 1024


def jobs(n: int) -> list[JobSpec]:
    agent = AgentSpec(name="echo", adapter="echo")
    return [
        JobSpec(
            number=i,
            scenario=Scenario(key=f"s{i}", base_key=f"s{i}", name=f"S{i}", prompt="p", judge="j"),
            agent=agent,
            run_index=1,
            run_count=1,
            time_limit_s=60,
            config_dir="/tmp",
        )
        for i in range(1, n + 1)
    ]


def context() -> JobContext:
    return JobContext(run_token="t", adapters={}, parent_env={}, stop=StopSignal())


class GatedExecutor:
    """Runs a job by waiting until the test releases it; records starts and overlap."""

    def __init__(self, capacity: int, payload: bool = False, *, remote: bool = False) -> None:
        self._capacity = capacity
        self._remote = remote
        self.fail: set[int] = set()
        self.tokens = 0
        self.payload = payload
        self.started: list[int] = []
        self.running = 0
        self.most = 0
        self.gates: dict[int, asyncio.Event] = {}

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def remote(self) -> bool:
        return self._remote

    async def execute(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        self.started.append(spec.number)
        self.running += 1
        self.most = max(self.most, self.running)
        gate = self.gates.setdefault(spec.number, asyncio.Event())
        try:
            stop = asyncio.ensure_future(ctx.stop.event.wait())
            done = asyncio.ensure_future(gate.wait())
            await asyncio.wait({stop, done}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            done.cancel()
        finally:
            self.running -= 1
        if not gate.is_set():
            return JobOutcome(spec=spec, status="cancelled", failed=False, error=ctx.stop.reason)
        # A big stderr stands for a big transcript: the scheduler must not hold on to it.
        stderr = ("x" * PAYLOAD_BYTES + str(spec.number)) if self.payload else ""
        failed = spec.number in self.fail
        return JobOutcome(
            spec=spec,
            status="failed" if failed else "completed",
            failed=failed,
            stderr=stderr,
            transcript=(
                Transcript(agent="echo", usage=TokenUsage(input=self.tokens))
                if self.tokens
                else None
            ),
        )


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def test_at_most_capacity_jobs_run_and_they_start_in_plan_order() -> None:
    executor = GatedExecutor(capacity=3)
    saved: list[tuple[int, str]] = []
    task = asyncio.ensure_future(
        schedule(jobs(8), executor, context(), lambda o: saved.append((o.spec.number, o.status)))
    )
    await settle()
    assert executor.started == [1, 2, 3] and executor.running == 3
    executor.gates[2].set()  # the second finishes first: the next job takes its place
    await settle()
    assert saved == [(2, "completed")]
    assert executor.started == [1, 2, 3, 4] and executor.running == 3
    for number in range(1, 9):
        executor.gates.setdefault(number, asyncio.Event()).set()
        await settle()
    await asyncio.wait_for(task, 5)
    assert executor.started == list(range(1, 9))
    assert executor.most == 3
    assert sorted(n for n, _ in saved) == list(range(1, 9))
    assert {status for _, status in saved} == {"completed"}


async def test_a_stop_starts_nothing_more_and_cancels_the_rest_in_order() -> None:
    executor = GatedExecutor(capacity=2)
    ctx = context()
    saved: list[tuple[int, str]] = []
    task = asyncio.ensure_future(
        schedule(jobs(6), executor, ctx, lambda o: saved.append((o.spec.number, o.status)))
    )
    await settle()
    executor.gates[1].set()
    await settle()
    assert executor.started == [1, 2, 3]
    ctx.stop.trigger("Run cancelled (test)")
    await asyncio.wait_for(task, 5)
    assert executor.started == [1, 2, 3]  # nothing started after the stop
    assert saved == [
        (1, "completed"),
        (2, "cancelled"),
        (3, "cancelled"),
        (4, "cancelled"),
        (5, "cancelled"),
        (6, "cancelled"),
    ]


async def test_delivered_outcomes_are_not_kept() -> None:
    """Memory must not grow with the transcripts of finished jobs."""
    n = 12
    executor = GatedExecutor(capacity=2, payload=True)
    for number in range(1, n + 1):
        executor.gates[number] = asyncio.Event()
        executor.gates[number].set()
    sizes: list[int] = []
    held: list[int] = []

    def on_result(outcome: JobOutcome) -> None:
        sizes.append(len(outcome.stderr))
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])  # while the run is still going

    gc.collect()
    tracemalloc.start()
    try:
        await schedule(jobs(n), executor, context(), on_result)
    finally:
        tracemalloc.stop()
    assert len(sizes) == n and min(sizes) > PAYLOAD_BYTES
    # Holding every outcome would have n payloads (48 MiB) allocated by the last delivery.
    most = max(held)
    assert most < 4 * PAYLOAD_BYTES, f"{most / 2**20:.1f} MiB held during the run"


async def test_a_remote_executor_gets_the_next_job_before_the_last_one_is_saved() -> None:
    """A remote hand-off is a round trip: the next job goes out, then the outcome is saved.
    Not after a failure, nor once the finished job's tokens reach the run's budget."""
    executor = GatedExecutor(capacity=1, remote=True)
    executor.fail = {2}
    ctx = context()
    started_at_save: dict[int, list[int]] = {}

    def on_result(outcome: JobOutcome) -> None:
        started_at_save[outcome.spec.number] = list(executor.started)

    task = asyncio.ensure_future(schedule(jobs(4), executor, ctx, on_result))
    for number in (1, 2, 3):
        await settle()
        executor.gates.setdefault(number, asyncio.Event()).set()
    await settle()
    assert started_at_save[1] == [1, 2]  # job 2 was sent before job 1 was saved
    assert started_at_save[2] == [1, 2]  # job 2 failed: job 3 waited for its save
    assert started_at_save[3] == [1, 2, 3, 4]
    executor.gates.setdefault(4, asyncio.Event()).set()
    await asyncio.wait_for(task, 5)
    assert sorted(started_at_save) == [1, 2, 3, 4]

    # The budget: the finished job's tokens are counted before the next one would start.
    budget_ctx = context()

    def over_budget(job: JobSpec, total: int) -> tuple[str, str] | None:
        budget_ctx.stop.trigger("Overall token limit reached (test)", "run_limit")
        return None

    budget_ctx.on_tokens = over_budget  # type: ignore[assignment]
    spent = GatedExecutor(capacity=1, remote=True)
    spent.tokens = 10
    for number in (1, 2):
        spent.gates[number] = asyncio.Event()
        spent.gates[number].set()
    saved: list[tuple[int, str]] = []
    await asyncio.wait_for(
        schedule(jobs(2), spent, budget_ctx, lambda o: saved.append((o.spec.number, o.status))),
        5,
    )
    assert spent.started == [1]
    assert saved == [(1, "completed"), (2, "cancelled")]


async def test_a_local_executor_saves_before_the_next_job_starts() -> None:
    executor = GatedExecutor(capacity=1)
    started_at_save: dict[int, list[int]] = {}
    for number in (1, 2):
        executor.gates[number] = asyncio.Event()
        executor.gates[number].set()

    def on_result(outcome: JobOutcome) -> None:
        started_at_save[outcome.spec.number] = list(executor.started)

    await asyncio.wait_for(schedule(jobs(2), executor, context(), on_result), 5)
    assert started_at_save == {1: [1], 2: [1, 2]}
