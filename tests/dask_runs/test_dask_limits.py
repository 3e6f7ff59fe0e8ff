"""A scenario's time limit on a real cluster: enforced on the worker, as locally. The agent
that overstays is a hostile one (a child, a grandchild and a ``setsid`` child, all asleep);
when the run is over none of them is left anywhere on the machine."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from helpers.processes import wait_for
from helpers.projects import only_report, write_project
from pipeline.helpers import cli_env, ndjson_adapter, pids_file, scenario, start_cli

from .conftest import DaskCluster, dask_env
from .helpers import processes_with, report, runs_by_job, worker_address

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_a_time_limit_is_enforced_on_the_worker_and_leaves_no_agent(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    token = f"axis-limit-{uuid.uuid4().hex[:12]}"
    address = worker_address(dask_cluster.start_worker("w1", dask_env(E2E_DIR=str(e2e))).log)
    root = write_project(
        tmp_path / "proj",
        adapters={"tree": ndjson_adapter("tree"), "quick": ndjson_adapter("quick")},
        # The prompt is the agent's last argument: every process of its tree (forks of one
        # Python) carries the token in its command line, wherever its PID namespace is.
        scenarios={
            "stuck": scenario(agents=["tree"], prompt=token, limits={"time_minutes": 0.1}),
            "fine": scenario(agents=["quick"]),
        },
        env=["E2E_DIR"],
        settings={"sandbox": {"writable": [str(e2e)]}},
    )
    started = time.monotonic()
    log = tmp_path / "axis.log"
    axis = start_cli(
        root, "--scheduler", dask_cluster.address, "--no-score", "--grace-seconds", "0.5",
        env=cli_env(), log=log,
    )  # fmt: skip
    try:
        # While it runs, the scan sees the agent's tree (so its silence later means gone).
        wait_for(pids_file(e2e, "stuck").exists, timeout=45, what="the agent's tree")
        running = processes_with(token)
        assert len(running) >= 4, running  # the agent, its child, grandchild, setsid child
        code = axis.wait(timeout=60)
    finally:
        if axis.poll() is None:
            os.killpg(axis.pid, signal.SIGKILL)
    took = time.monotonic() - started
    output = log.read_text()
    assert code == 1, output  # a failed run
    assert "Traceback" not in output, output
    runs = {key: run for (key, _), run in runs_by_job(report(root)).items()}
    stuck, fine = runs["stuck"], runs["fine"]
    assert stuck["status"] == "failed", stuck
    assert stuck["errorKind"] == "timeout", stuck
    assert stuck["error"] == "Scenario time limit reached (0.1m)", stuck["error"]
    assert stuck["worker"] == address and fine["worker"] == address
    assert fine["status"] == "completed", fine
    # The agent really ran on the worker (its tree wrote its pids and spoke) ...
    pids = json.loads(pids_file(e2e, "stuck").read_text())
    assert set(pids) == {"pid", "child", "grandchild", "setsid"}
    transcript = json.loads((only_report(root) / stuck["dir"] / "transcript.json").read_text())
    assert "before-timeout-2" in [e.get("text") for e in transcript["entries"]]
    # ... was stopped by its limit, not by the end of a long sleep ...
    assert stuck["durationMs"] < 15_000, stuck["durationMs"]
    assert took < 60
    # ... and nothing of it is left on the machine (the worker itself lives on).
    assert wait_for(lambda: not processes_with(token), timeout=5, what="the agent to die")
    assert all(w.proc.poll() is None for w in dask_cluster.workers)
