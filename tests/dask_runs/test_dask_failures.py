"""A Dask run when things go wrong: a worker SIGKILLed under its jobs, Ctrl-C, the whole
cluster lost. Every job ends exactly once in the report, no agent outlives its worker or
the run, and ``--resume`` finishes the report on the cluster (a new one after a loss)."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from helpers.processes import wait_for
from helpers.projects import only_report
from pipeline.helpers import cli_env, run_cli, start_cli

from .conftest import DaskCluster, dask_env
from .helpers import maker_project, processes_with, report, runs_by_job

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def launched(e2e: Path) -> Counter[str]:
    """Agent launches per scenario (each appends ``<scenario> <pid>``)."""
    log = e2e / "launches.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return Counter(line.split()[0] for line in lines)


def setup(tmp_path: Path, cluster: DaskCluster, jobs: int, sleep: float, slots: int = 2):  # type: ignore[no-untyped-def]
    token = f"dask-{uuid.uuid4().hex}"
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    (e2e / "sleep").write_text(f"{sleep}\n")
    workers = [
        cluster.start_worker(name, dask_env(E2E_DIR=str(e2e)), slots=slots) for name in ("w1", "w2")
    ]
    root = maker_project(tmp_path / "proj", jobs, e2e=e2e, token=token)
    return token, e2e, workers, root


def test_a_worker_killed_under_its_jobs_loses_nothing_and_duplicates_nothing(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    token, e2e, (w1, _w2), root = setup(tmp_path, dask_cluster, 8, sleep=3)
    proc = start_cli(root, "--scheduler", dask_cluster.address, env=cli_env())
    try:
        wait_for(lambda: sum(launched(e2e).values()) >= 4, timeout=60)  # both workers busy
        running_before = set(processes_with(token))
        os.kill(w1.pid, signal.SIGKILL)  # the worker alone: its agents must die with it
        assert proc.wait(timeout=120) == 0, (root / "axis-cli.log").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    runs = runs_by_job(report(root))
    assert len(runs) == 8
    assert {r["status"] for r in runs.values()} == {"completed"}
    retried = {job[0] for job, r in runs.items() if r["attempts"] == 2}
    assert retried, "the killed worker was running jobs: they must have run again"
    assert {r["attempts"] for r in runs.values()} <= {1, 2}
    # Each scenario launched once per attempt: the lost attempts, and nothing more.
    assert launched(e2e) == Counter({job[0]: r["attempts"] for job, r in runs.items()})
    wait_for(lambda: processes_with(token) == [], timeout=15, what="the agents to be gone")
    assert running_before, "no agent was running when the worker was killed"
    assert all(r["worker"] != "" for r in runs.values())


def test_ctrl_c_stops_every_agent_on_every_worker_and_resume_finishes_on_the_cluster(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    token, e2e, _workers, root = setup(tmp_path, dask_cluster, 6, sleep=60)
    args = ("--scheduler", dask_cluster.address, "--grace-seconds", "1")
    proc = start_cli(root, *args, env=cli_env())
    try:
        wait_for(lambda: sum(launched(e2e).values()) >= 4, timeout=60)
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 130, (root / "axis-cli.log").read_text()
    assert took < 20, f"stopping took {took:.1f} s"
    assert wait_for(lambda: processes_with(token) == [], timeout=10), processes_with(token)
    folder = only_report(root)
    first = report(root)
    assert first["state"] == "interrupted"
    statuses = Counter(r["status"] for r in runs_by_job(first).values())
    assert statuses["cancelled"] >= 4, statuses
    (e2e / "sleep").write_text("0\n")
    resumed = run_cli(root, "--resume", folder.name, *args, env=cli_env(), timeout=120)
    assert resumed.exit_code == 0, resumed.stderr
    final = runs_by_job(report(root))
    assert len(final) == 6 and {r["status"] for r in final.values()} == {"completed"}
    assert report(root)["state"] == "finished"


def test_a_lost_cluster_ends_the_run_and_resume_finishes_on_a_new_one(
    dask_cluster: DaskCluster, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    token, e2e, _workers, root = setup(tmp_path, dask_cluster, 6, sleep=60)
    proc = start_cli(root, "--scheduler", dask_cluster.address, env=cli_env())
    try:
        wait_for(lambda: sum(launched(e2e).values()) >= 4, timeout=60)
        dask_cluster.stop()  # scheduler and workers, SIGKILL
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (root / "axis-cli.log").read_text()
    assert code != 0 and "Traceback" not in log, log
    assert "cluster" in log.lower(), log
    assert wait_for(lambda: processes_with(token) == [], timeout=15), processes_with(token)
    folder = only_report(root)
    assert report(root)["state"] in ("finished", "interrupted")
    # A new cluster: a scheduler and two workers of their own.
    fresh: DaskCluster = request.getfixturevalue("second_cluster")
    for name in ("n1", "n2"):
        fresh.start_worker(name, dask_env(E2E_DIR=str(e2e)), slots=2)
    (e2e / "sleep").write_text("0\n")
    resumed = run_cli(
        root, "--resume", folder.name, "--scheduler", fresh.address, env=cli_env(), timeout=120
    )
    assert resumed.exit_code == 0, resumed.stderr
    final = runs_by_job(report(root))
    assert {r["status"] for r in final.values()} == {"completed"}, final
    new_workers = {w.address for w in fresh.workers}
    assert any(r["worker"] in new_workers for r in final.values())


def test_a_run_level_time_limit_stops_the_agents_on_every_worker(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """The limit is ``axis run``'s (one clock for the run): it stops the run, and the stop
    channel stops what runs on the workers."""
    token, e2e, _workers, root = setup(tmp_path, dask_cluster, 6, sleep=60)
    config = json.loads((root / "axis.config.json").read_text())
    config["settings"]["limits"] = {"run": {"time_minutes": 0.1}}  # 6 s
    (root / "axis.config.json").write_text(json.dumps(config))
    started = time.monotonic()
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--grace-seconds", "1",
        env=cli_env(), timeout=120,
    )  # fmt: skip
    took = time.monotonic() - started
    assert done.exit_code == 1, done.stderr
    assert took < 40, f"the run took {took:.0f} s"
    runs = runs_by_job(report(root))
    assert {r["errorKind"] for r in runs.values()} == {"run_limit"}, runs
    assert sum(launched(e2e).values()) == 4  # the 4 slots' jobs started; no more did
    wait_for(lambda: processes_with(token) == [], timeout=10, what="the agents to be gone")


def test_axis_run_killed_leaves_no_agent_running_on_the_workers(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """SIGKILL of ``axis run``: no stop message is sent, but the scheduler releases its
    tasks, and each worker stops the run's jobs when it sees that."""
    token, e2e, workers, root = setup(tmp_path, dask_cluster, 4, sleep=60)
    proc = start_cli(
        root, "--scheduler", dask_cluster.address, "--grace-seconds", "1", env=cli_env()
    )
    try:
        wait_for(lambda: sum(launched(e2e).values()) >= 4, timeout=60)
        assert all(sentinels_of(w.pid) for w in workers)  # each worker holds the run
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    wait_for(lambda: processes_with(token) == [], timeout=20, what="the agents to be gone")
    assert {w.proc.poll() for w in workers} == {None}, "the workers themselves go on"
    # And each worker let go of the run (its sentinel, a child of the worker, ends).
    wait_for(
        lambda: not any(sentinels_of(w.pid) for w in workers), timeout=30,
        what="the workers to forget the run",
    )  # fmt: skip


def sentinels_of(pid: int) -> list[int]:
    """The run sentinels (tests/../execute/process/sentinel.py) that ``pid`` started."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"execute/process" in cmdline:
            found.append(int(name))
    return found


_BREAK_ONE_JOB = """
# Preloaded into the worker: the job of scenario 1 fails inside its task (a harness bug
# there, a disk that fills) before its agent starts; the others run as usual.
import axis_eval.distributed.worker as worker

# Dask imports a preload twice: patch once.
_real = getattr(worker.run_job, "real", worker.run_job)


def _deep(n):
    return _deep(n + 1)


async def _run_job(spec, ctx):
    if spec.scenario.key == "s01":
        raise RuntimeError("the worker's disk is on fire")
    if spec.scenario.key == "s02":
        _deep(0)  # a RecursionError: its traceback is too deep for Dask to send back
    return await _real(spec, ctx)


_run_job.real = _real
worker.run_job = _run_job
"""


def test_a_task_that_fails_on_its_worker_is_one_infrastructure_attempt(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """An exception inside a job's task (not the agent's failure, not a lost worker) comes
    back as that job's infrastructure failure after one attempt, even one Dask could not
    send back; the other jobs and the run go on, and nothing of it is started again."""
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    preload = tmp_path / "break_one_job.py"
    preload.write_text(_BREAK_ONE_JOB)
    env = dask_env(E2E_DIR=str(e2e), DASK_DISTRIBUTED__WORKER__PRELOAD=json.dumps([str(preload)]))
    dask_cluster.start_worker("w1", env, slots=2)
    root = maker_project(tmp_path / "proj", 3, e2e=e2e)
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--no-score", env=cli_env(), timeout=120
    )
    assert done.exit_code == 1, done.stderr  # a failed job: the run says so
    assert "Traceback" not in done.stderr
    runs = {job[0]: r for job, r in runs_by_job(report(root)).items()}
    broken = runs["s01"]
    assert broken["status"] == "failed" and broken["errorKind"] == "infrastructure", broken
    assert "the task failed on its worker" in broken["error"], broken["error"]
    assert "the worker's disk is on fire" in broken["error"]
    assert broken["attempts"] == 1
    deep = runs["s02"]  # not a run left waiting for a task whose error cannot travel
    assert deep["errorKind"] == "infrastructure" and "RecursionError" in deep["error"], deep
    assert runs["s00"]["status"] == "completed"
    assert launched(e2e) == Counter({"s00": 1})  # the broken jobs' agents never started
