"""Time limits kill a job's whole process tree; killing `axis run` kills its agents.

Host process control is what contains a ``none`` job (the job marker, the orphan machinery,
the sentinel, killing a host process tree): these tests run under ``sandbox: none``. The
bwrap namespace's equivalent is tests/execute/sandbox/test_hostile_sandbox.py; a SIGKILL of
the harness is not in it, so that test runs under ``auto`` too (bwrap's --die-with-parent).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from helpers.processes import alive, read_json, wait_dead, wait_for

from .helpers import (
    HOST_ONLY,
    Procs,
    base_environ,
    cli_env,
    host_pids,
    ndjson_adapter,
    observed,
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
        settings=HOST_ONLY,
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


@pytest.mark.parametrize("mode", ["none", "auto"])
def test_sigkill_of_axis_run_leaves_no_agent_behind(
    tmp_path: Path, e2e_dir: Path, procs: Procs, mode: str
) -> None:
    """Under ``none`` the sentinel ends the agents; under bwrap their namespaces die with
    the harness."""
    root = write_project(
        tmp_path / "proj",
        adapters={"sleeper": ndjson_adapter("sleep")},
        scenarios={"a": scenario(), "b": scenario()},
        env=["E2E_DIR"],
        settings=HOST_ONLY if mode == "none" else observed(e2e_dir),
    )
    axis = procs.add(start_cli(root, env=cli_env(E2E_DIR=str(e2e_dir))))
    keys = ("a", "b")
    files = [pids_file(e2e_dir, key) for key in keys]
    wait_for(lambda: all(f.exists() for f in files), timeout=20, what="both agents to start")
    # The agents' own pids (of their PID namespaces under bwrap) as the host sees them.
    pids = [
        p
        for k, f in zip(keys, files, strict=True)
        for p in host_pids(root, k, read_json(f).values())
    ]
    procs.pids.extend(pids)
    assert all(alive(p) for p in pids)

    axis.send_signal(signal.SIGKILL)
    assert axis.wait(timeout=10) == -signal.SIGKILL
    wait_dead(pids, timeout=5.0)
    # The report it left says the run never finished.
    manifest = read_json(report_dirs(root)[0] / "report.json")
    assert manifest["state"] == "running"
    assert {r["status"] for p in manifest["results"] for r in p["runs"]} == {"cancelled"}
