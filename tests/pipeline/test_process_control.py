"""Time limits kill a job's whole process tree; killing `axis run` kills its agents."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from helpers.processes import alive, read_json, wait_dead, wait_for

from .helpers import (
    Procs,
    base_environ,
    cli_env,
    ndjson_adapter,
    pids_file,
    report_dirs,
    run_api,
    runs_by_scenario,
    scenario,
    start_cli,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


async def test_a_timed_out_job_loses_its_whole_tree_while_another_job_runs_on(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"tree": ndjson_adapter("tree"), "slow": ndjson_adapter("overlap:3.0")},
        agents=["tree", "slow"],
        scenarios={
            "stuck": scenario(agents=["tree"], limits={"time_minutes": 0.02}),
            "steady": scenario(agents=["slow"]),
        },
        env=["E2E_DIR"],
    )
    outcome = await run_api(root, base_environ(E2E_DIR=str(e2e_dir)), grace_s=0.5)
    pids = read_json(pids_file(e2e_dir, "stuck"))
    procs.pids.extend(pids.values())
    assert set(pids) == {"pid", "child", "grandchild", "setsid"}
    wait_dead(list(pids.values()), timeout=2.0)  # dead by the time the run returned

    manifest = read_json(outcome.report_dir / "report.json")
    runs = runs_by_scenario(manifest)
    stuck = runs["stuck"]
    assert stuck["status"] == "failed"
    assert stuck["errorKind"] == "timeout"
    assert stuck["error"].startswith("Scenario time limit reached"), stuck["error"]
    transcript = read_json(outcome.report_dir / stuck["dir"] / "transcript.json")
    texts = [e.get("text") for e in transcript["entries"]]
    assert "before-timeout-1" in texts and "before-timeout-2" in texts

    steady = runs["steady"]
    assert steady["status"] == "completed", steady
    # The second job really was running across the first one's timeout and cleanup.
    log = (e2e_dir / "overlap.log").read_text().split()
    start, end = float(log[1]), float(log[4])
    assert end - start >= 3.0
    assert steady["durationMs"] > stuck["durationMs"]


def test_sigkill_of_axis_run_leaves_no_agent_behind(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"sleeper": ndjson_adapter("sleep")},
        scenarios={"a": scenario(), "b": scenario()},
        env=["E2E_DIR"],
    )
    axis = procs.add(start_cli(root, env=cli_env(E2E_DIR=str(e2e_dir))))
    files = [pids_file(e2e_dir, key) for key in ("a", "b")]
    wait_for(lambda: all(f.exists() for f in files), timeout=20, what="both agents to start")
    pids = [pid for f in files for pid in read_json(f).values()]
    procs.pids.extend(pids)
    assert all(alive(p) for p in pids)

    axis.send_signal(signal.SIGKILL)
    assert axis.wait(timeout=10) == -signal.SIGKILL
    wait_dead(pids, timeout=5.0)
    # The report it left says the run never finished.
    manifest = read_json(report_dirs(root)[0] / "report.json")
    assert manifest["state"] == "running"
    assert {r["status"] for p in manifest["results"] for r in p["runs"]} == {"cancelled"}
