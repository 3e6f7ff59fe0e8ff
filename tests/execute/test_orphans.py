"""Processes no marker names (double-forked, setsid, ``env -i``) and fork storms, in real jobs.

Each test runs jobs as a run does: this process a child subreaper with the orphan reaper
and the run's sentinel (which claims the adopted orphans), jobs through ``run_job`` or the
scheduler, agents from tests/agents.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from axis_eval.adapters.base import (
    AdapterResult,
    AgentAdapter,
    LinesMode,
    ResultContext,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.config.scenario import Scenario
from axis_eval.execute.executor import LocalExecutor, schedule
from axis_eval.execute.job import JobContext, StopSignal, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import (
    OrphanReaper,
    ProcessSpec,
    Sentinel,
    activity,
    become_subreaper,
    forget_marker,
    kill_marked,
    marked_pids,
    new_run_token,
    orphans,
    procfs,
    spawn,
)
from axis_eval.planning.models import AgentSpec, JobSpec
from helpers.processes import first_json_line

PY = sys.executable
AGENTS = Path(__file__).resolve().parent.parent / "agents"


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw.rpartition(b")")[2].split()[0] not in (b"Z", b"X")


def unmarked(pid: int) -> bool:
    """``pid`` runs with an empty environment: no job marker names it."""
    return Path(f"/proc/{pid}/environ").read_bytes() == b""


async def until(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@dataclass
class Answer:
    text: str | None = None


def _on_line(event: Any, ctx: StreamContext[Answer]) -> None:
    if isinstance(event, dict) and event.get("type") == "result":
        ctx.state.text = str(event.get("text"))


def _get_result(ctx: ResultContext[Answer]) -> AdapterResult:
    return AdapterResult(ctx.state.text)


def adapter() -> AgentAdapter[Answer]:
    """Runs the job's agent as the scenario's prompt says: ``script arg...`` in tests/agents."""
    return create_agent_adapter(
        name="scripted",
        build_args=lambda inp: inp.prompt.split()[1:],
        initial_state=Answer,
        stream=LinesMode(on_line=_on_line),
        get_result=_get_result,
        resolve_command=lambda inp: [PY, str(AGENTS / inp.prompt.split()[0])],
    )


def job(number: int, *argv: str | Path) -> JobSpec:
    prompt = " ".join(str(arg) for arg in argv)
    scenario = Scenario(key=f"s{number}", base_key=f"s{number}", name="S", prompt=prompt, judge="j")
    return JobSpec(
        number=number,
        scenario=scenario,
        agent=AgentSpec(name="a", adapter="scripted"),
        run_index=1,
        run_count=1,
        time_limit_s=60,
        config_dir="/tmp",
        # The orphan machinery is what contains a `none` job; a bwrap job's namespace needs
        # none of it (tests/execute/sandbox), and its agents could not write the pid files.
        sandbox=SandboxPolicy(mode="none"),
    )


@pytest.fixture
async def run_ctx(tmp_path: Path) -> AsyncIterator[JobContext]:
    """A run's scope around the test and a job context."""
    async with run_scope(tmp_path) as ctx:
        yield ctx


@contextlib.asynccontextmanager
async def run_scope(tmp_path: Path) -> AsyncIterator[JobContext]:
    """What `RunSession.guarded` sets up around a run's jobs, and a job context."""
    # A run starts in a fresh process; here an earlier test may have left a marker live (a
    # spawn never cleaned up), which would spare every orphan born after it.
    for key in [key for key in activity.live() if isinstance(key, str)]:
        forget_marker(key)
    assert become_subreaper()
    token = new_run_token()
    sentinel = await Sentinel.start(token)
    try:
        async with OrphanReaper():
            yield JobContext(
                run_token=token,
                adapters={"scripted": adapter()},
                parent_env={"PATH": os.environ.get("PATH", os.defpath)},
                stop=StopSignal(),
                grace_s=0.5,
                tmp_base=str(tmp_path),
            )
    finally:
        await sentinel.close()
        become_subreaper(False)


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test expects dead; whatever survives is killed so no test leaks it."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


async def test_an_unmarked_daemon_dies_with_its_job_and_spares_a_concurrent_jobs_own(
    tmp_path: Path, run_ctx: JobContext, leftovers: list[int]
) -> None:
    """Job A's daemon is killed at A's cleanup while job B runs on; B's own daemon, born
    while both ran (so it might be A's as much as B's), lives until B's end."""
    a_pids, b_pids = tmp_path / "a.pids", tmp_path / "b.pids"
    a_gate, b_gate = tmp_path / "a.go", tmp_path / "b.go"
    a = asyncio.ensure_future(run_job(job(1, "proc_daemon.py", a_pids, a_gate), run_ctx))
    assert await until(lambda: len(pids_in(a_pids)) == 1)
    # Births are known to a clock tick (10 ms), and a job counts as live one tick early:
    # B starts two ticks after A's daemon was born, so the daemon cannot be B's.
    born = procfs.process_info(pids_in(a_pids)[0])
    assert born is not None
    assert await until(lambda: activity.now_ticks() > born[4] + 2)
    b = asyncio.ensure_future(run_job(job(2, "proc_daemon.py", b_pids, b_gate), run_ctx))
    assert await until(lambda: len(pids_in(b_pids)) == 1)
    (a_daemon,), (b_daemon,) = pids_in(a_pids), pids_in(b_pids)
    leftovers.extend([a_daemon, b_daemon])
    assert unmarked(a_daemon) and unmarked(b_daemon)
    assert os.getsid(a_daemon) == a_daemon  # out of the agent's session and group
    assert marked_pids(f"{run_ctx.run_token}/1") != []  # A's agent still runs meanwhile

    a_gate.touch()
    a_done = await asyncio.wait_for(a, 30)
    assert a_done.status == "completed" and a_done.result == f"daemon {a_daemon} alive"
    assert not running(a_daemon), "job A's unmarked daemon survived its job"
    assert running(b_daemon), "job B's own daemon was killed while B still ran"

    b_gate.touch()
    b_done = await asyncio.wait_for(b, 30)
    assert b_done.result == f"daemon {b_daemon} alive"  # alive all through its job
    assert not running(b_daemon), "job B's unmarked daemon survived its job"
    assert orphans.adopted() == ([], []), "an orphan is left, or a zombie unreaped"


async def test_no_unmarked_daemon_survives_a_run_at_concurrency_three(
    tmp_path: Path, run_ctx: JobContext, leftovers: list[int]
) -> None:
    pidfile = tmp_path / "daemons.pids"
    specs = [job(n, "proc_daemon.py", pidfile) for n in range(1, 9)]
    outcomes: list[JobOutcome] = []
    await asyncio.wait_for(schedule(specs, LocalExecutor(3), run_ctx, outcomes.append), 60)
    daemons = pids_in(pidfile)
    leftovers.extend(daemons)
    assert len(daemons) == 8
    assert [o.status for o in outcomes] == ["completed"] * 8
    assert all(o.result is not None and o.result.endswith(" alive") for o in outcomes)
    assert [pid for pid in daemons if running(pid)] == [], "unmarked daemons survived"
    assert orphans.adopted() == ([], [])


async def test_a_fork_storm_leaves_nothing_behind_and_does_not_stall_the_run(
    tmp_path: Path, run_ctx: JobContext, leftovers: list[int]
) -> None:
    """200 forks in a burst: short-lived children, zombies left to be adopted, orphans that
    exit soon and unmarked ones that would sleep on; a quick job runs alongside."""
    pidfile = tmp_path / "storm.pids"
    quick = tmp_path / "quick.pids"
    specs = [job(1, "proc_storm.py", pidfile, "200"), job(2, "proc_daemon.py", quick)]
    outcomes: list[JobOutcome] = []
    started = time.monotonic()
    await asyncio.wait_for(schedule(specs, LocalExecutor(2), run_ctx, outcomes.append), 60)
    elapsed = time.monotonic() - started
    sleepers = pids_in(pidfile)
    leftovers.extend(sleepers + pids_in(quick))
    by_number = {o.spec.number: o for o in outcomes}
    assert by_number[1].status == "completed" and by_number[1].result == "forked 200"
    assert by_number[2].status == "completed"
    assert len(sleepers) == 25  # written once unmarked: the storm agent checks
    assert [pid for pid in sleepers + pids_in(quick) if running(pid)] == []
    assert marked_pids(f"{run_ctx.run_token}/1") == []
    assert await until(lambda: orphans.adopted() == ([], []), 2.0), "zombies left unreaped"
    assert elapsed < 20, f"the storm stalled the run ({elapsed:.1f}s)"


async def test_outside_a_run_an_adopted_orphan_is_left_alone(
    tmp_path: Path, leftovers: list[int]
) -> None:
    """No claim (an API caller's or a task runner's process): the cleanup kills only what
    the marker and the group name, as before."""
    assert become_subreaper()
    marker = f"{new_run_token()}/job1"
    pidfile = tmp_path / "d.pids"
    try:
        async with OrphanReaper():
            argv = [PY, str(AGENTS / "proc_daemon.py"), str(pidfile)]
            proc = await spawn(ProcessSpec(argv, str(tmp_path), dict(os.environ), marker))
            assert await asyncio.wait_for(proc.wait(), 30) == 0
            await proc.stop(grace_s=0.5)
            await kill_marked(marker, 0.5)
            (daemon,) = pids_in(pidfile)
            leftovers.append(daemon)
            assert running(daemon) and not orphans.claiming()
            os.kill(daemon, signal.SIGKILL)
            assert await until(lambda: not Path(f"/proc/{daemon}").exists()), "not reaped"
    finally:
        become_subreaper(False)


async def test_a_child_the_caller_had_before_the_run_is_left_alone(
    tmp_path: Path, leftovers: list[int]
) -> None:
    """An API caller's own child in a session of its own is not the run's orphan, though it
    looks like one (unregistered, another session): it was born before the run began."""
    theirs = subprocess.Popen(["sleep", "30"], start_new_session=True)
    leftovers.append(theirs.pid)
    try:
        await asyncio.sleep(0.03)  # a few clock ticks: born clearly before the run
        async with run_scope(tmp_path) as ctx:
            pidfile = tmp_path / "d.pids"
            outcome = await run_job(job(1, "proc_daemon.py", pidfile), ctx)
            assert outcome.status == "completed"
            leftovers.extend(pids_in(pidfile))
        assert [pid for pid in pids_in(pidfile) if running(pid)] == []
        assert theirs.poll() is None, "the caller's own child was killed"
    finally:
        theirs.kill()
        theirs.wait()


def test_sigkill_of_the_harness_takes_its_unmarked_daemons_along(tmp_path: Path) -> None:
    """The sentinel was told of the adopted orphan: it kills it once the harness is gone."""
    pidfile = tmp_path / "d.pids"
    harness = subprocess.Popen(
        [PY, str(AGENTS / "proc_harness.py"), "proc_daemon.py", str(pidfile)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        info = first_json_line(harness)
        daemons = pids_in(pidfile)
        assert len(daemons) == 1 and running(daemons[0]) and unmarked(daemons[0])
        assert info["reported"] == daemons
    finally:
        harness.kill()  # SIGKILL: no cleanup code of the harness runs
        harness.wait(timeout=10)
        assert harness.stdout is not None and harness.stderr is not None
        harness.stdout.close()
        harness.stderr.close()
        survivors = outlived(pids_in(pidfile), 5.0)  # killed now, whatever happened
    assert survivors == [], "the sentinel left the unmarked daemon running"


def test_sigkill_of_the_harness_takes_an_agents_unmarked_child_along() -> None:
    """An agent's child that cleared its environment and left the agent's session, while
    the agent still runs (not an orphan yet): the sentinel kills the agent's whole tree."""
    harness = subprocess.Popen(
        [PY, str(AGENTS / "proc_harness.py"), "proc_unmarked_child.py"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    pids: list[int] = []
    try:
        info = first_json_line(harness)
        pids = [info["pid"], info["child"]]
        assert running(info["child"]) and unmarked(info["child"])
    finally:
        harness.kill()  # SIGKILL: no cleanup code of the harness runs
        harness.wait(timeout=10)
        assert harness.stdout is not None and harness.stderr is not None
        harness.stdout.close()
        harness.stderr.close()
        survivors = outlived(pids, 5.0)
    assert survivors == [], "the sentinel left part of the agent's tree running"


def outlived(pids: list[int], timeout_s: float) -> list[int]:
    """The pids still running after ``timeout_s``; each is SIGKILLed before returning."""
    deadline = time.monotonic() + timeout_s
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    survivors = [pid for pid in pids if running(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return survivors
