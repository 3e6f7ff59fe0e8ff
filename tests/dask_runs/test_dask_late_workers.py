"""A worker that joins a Dask run while it runs: checked by pre-flight first, then given
jobs, unless its slots would let more than ``--concurrency`` jobs run at once."""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from helpers.processes import wait_for
from pipeline.helpers import cli_env, start_cli

from .conftest import DaskCluster, dask_env
from .helpers import maker_project, report, runs_by_job, worker_address
from .test_dask_failures import launched

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _run_with_a_late_worker(
    cluster: DaskCluster, tmp_path: Path, concurrency: int
) -> tuple[Counter[str], str, str, str]:
    """12 one-second jobs on w1 (2 slots); w2 (2 slots) joins once they run. Jobs per
    worker address, w1's and w2's addresses, and axis run's output (warnings included)."""
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    (e2e / "sleep").write_text("1\n")
    env = dask_env(E2E_DIR=str(e2e))
    w1 = worker_address(cluster.start_worker("w1", env, slots=2).log)
    root = maker_project(tmp_path / "proj", 12, e2e=e2e)
    proc = start_cli(
        root, "--scheduler", cluster.address, "--concurrency", str(concurrency), env=cli_env()
    )
    try:
        wait_for(lambda: sum(launched(e2e).values()) >= 1, timeout=60)
        w2 = worker_address(cluster.start_worker("w2", env, slots=2).log)
        assert proc.wait(timeout=180) == 0, (root / "axis-cli.log").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    runs = runs_by_job(report(root))
    assert len(runs) == 12 and {r["status"] for r in runs.values()} == {"completed"}
    assert launched(e2e) == Counter({job[0]: 1 for job in runs})  # each exactly once
    output = (root / "axis-cli.log").read_text()
    return Counter(r["worker"] for r in runs.values()), w1, w2, output


def test_a_worker_that_joins_is_checked_then_takes_jobs(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    places, w1, w2, output = _run_with_a_late_worker(dask_cluster, tmp_path, concurrency=4)
    assert places[w2] >= 1, places  # it took jobs once its pre-flight passed
    assert "gets no jobs" not in output, output
    assert places[w1] + places[w2] == 12


def test_a_worker_that_would_break_the_cap_gets_no_jobs(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    # --concurrency 2 = w1's slots: jobs queue behind its slots, so w2's two more slots
    # would let four run at once.
    places, w1, w2, output = _run_with_a_late_worker(dask_cluster, tmp_path, concurrency=2)
    assert places == Counter({w1: 12}), places
    assert f"Dask worker {w2} joined but gets no jobs of this run" in output, output
    assert "more than --concurrency 2 jobs run at once" in output, output
