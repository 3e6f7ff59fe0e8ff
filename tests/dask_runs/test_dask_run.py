"""``axis run --executor dask`` against a real cluster on 127.0.0.1: a scheduler and two
worker processes started by the test. The report must mean what a local run's means."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from helpers.projects import only_report
from pipeline.helpers import cli_env, run_cli

from .conftest import DaskCluster, dask_env
from .helpers import comparable, maker_project, report, runs_by_job

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def job_path_imported(address: str) -> dict[str, bool]:
    """Per worker: whether axis-eval's job path is imported (before any task of a run)."""
    from distributed import Client

    with Client(address, timeout=30) as client:
        found: dict[str, bool] = client.run(
            lambda: "axis_eval.distributed.worker" in __import__("sys").modules
        )
    return found


def test_thirty_jobs_on_two_workers_report_what_a_local_run_reports(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    workers = [
        dask_cluster.start_worker(
            name, dask_env(E2E_DIR=str(e2e), MAKER_SLEEP="0.3"), preload=name == "w2"
        )
        for name in ("w1", "w2")
    ]
    # w2 was started as docs/distributed.md recommends: the job path imported at its start.
    assert job_path_imported(dask_cluster.address) == {
        workers[0].address: False,
        workers[1].address: True,
    }
    remote = maker_project(tmp_path / "remote", 10, runs=3, e2e=e2e)
    local = maker_project(tmp_path / "local", 10, runs=3, e2e=tmp_path / "local-e2e")
    (tmp_path / "local-e2e").mkdir()
    # axis run's own environment has no E2E_DIR: the jobs get the workers' own variables.
    done = run_cli(remote, "--scheduler", dask_cluster.address, env=cli_env(), timeout=240)
    assert done.exit_code == 0, done.stderr  # 87 each: two of three checks pass
    here = run_cli(local, env=cli_env(E2E_DIR=str(tmp_path / "local-e2e")), timeout=240)
    assert here.exit_code == 0, here.stderr

    on_dask, at_home = runs_by_job(report(remote)), runs_by_job(report(local))
    assert len(on_dask) == 30 and on_dask.keys() == at_home.keys()
    for job, run in on_dask.items():
        assert comparable(run) == comparable(at_home[job]), job
        assert run["status"] == "completed" and run["attempts"] == 1
        assert [c[1] for c in comparable(run)["checks"]] == [10, 10, 0]
        assert "made seed from the bundle" in run["result"]
    # Both workers ran jobs, every job exactly once, each where the report says.
    places = Counter(run["worker"] for run in on_dask.values())
    assert set(places) == {w.address for w in workers} and len(places) == 2
    assert all(run.get("worker") is None for run in at_home.values())
    launches = (e2e / "launches.log").read_text().splitlines()
    assert len(launches) == 30
    # The progress lines say where each job ran.
    finished = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert len(finished) == 30 and all(" on 127.0.0.1:" in line for line in finished)
    # The jobs read the config folder from the bundle unpacked on their worker, not from
    # axis run's copy of it.
    folder = only_report(remote)
    where = {p.read_text().strip() for p in folder.rglob("where.txt")}
    assert len(where) >= 2 and all("axis-bundles" in w for w in where), where
    assert str(remote) not in where
    assert {w.proc.poll() for w in workers} == {None}
    saved = json.loads((folder / "report.json").read_text())
    assert saved["state"] == "finished"


def test_a_worker_removes_the_folders_its_jobs_left_empty_when_the_run_ends(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    """A worker lives on after a run, so its process's exit cannot be what removes the
    folders of the jobs that left them empty (they wait for the run's end): the run's end
    on the worker does."""
    from pipeline.helpers import ndjson_adapter, write_project

    scratch = tmp_path / "worker-tmp"
    scratch.mkdir()
    worker = dask_cluster.start_worker("w1", dask_env(TMPDIR=str(scratch)))
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={f"s{n}": {} for n in range(6)},
    )
    done = run_cli(
        root, "--no-score", "--scheduler", dask_cluster.address, env=cli_env(), timeout=120
    )
    assert done.exit_code == 0, done.stderr
    manifest = report(root)
    assert [r["status"] for r in manifest["results"]] == ["completed"] * 6
    assert worker.proc.poll() is None  # still running: its exit removed nothing
    jobs_folders = [p for p in scratch.iterdir() if p.name.startswith("axis-jobs-")]
    assert jobs_folders, sorted(p.name for p in scratch.iterdir())  # the jobs ran here
    assert [sorted(p.iterdir()) for p in jobs_folders] == [[] for _ in jobs_folders]
