"""One real agent CLI on a Dask worker: Claude Code (its pinned CLI), under ``bwrap``, its
model the scripted model server that ``axis run --tape`` starts where axis run is (keyless:
the placeholder key travels in the run's ticket, never a real one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.projects import only_report
from helpers.system_parts import not_run
from pipeline.helpers import cli_env, run_cli

from .conftest import DaskCluster, dask_env
from .helpers import claude_project, report, runs_by_job, worker_address

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_claude_code_on_a_worker_under_bwrap(dask_cluster: DaskCluster, tmp_path: Path) -> None:
    from axis_eval.adapters.install import install_command, installed_binary
    from axis_eval.execute.sandbox.probe import bwrap_problem

    if installed_binary("claude-code") is None:
        not_run("DASK REAL AGENT (CLAUDE CODE)", f"run `{install_command(['claude-code'])}`")
    problem = bwrap_problem()
    if problem is not None:
        not_run("DASK REAL AGENT UNDER BWRAP", problem)
    # The worker runs on this host (the scripted server binds 127.0.0.1 where axis run is);
    # neither it nor axis run has an Anthropic key.
    env = {k: v for k, v in dask_env().items() if not k.startswith("ANTHROPIC_")}
    address = worker_address(dask_cluster.start_worker("w1", env).log)
    root = claude_project(tmp_path / "proj", sandbox="bwrap")
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--tape", str(root / "tape.yaml"),
        "--no-score", env=cli_env(), timeout=180,
    )  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    manifest = report(root)
    ((_, run),) = runs_by_job(manifest).items()
    assert run["status"] == "completed", run
    assert run["sandbox"] == "bwrap", run
    assert run["worker"] == address and run["attempts"] == 1, run
    assert run["agentVersion"], run  # the pinned CLI really ran, and said which it was
    assert run["result"].strip() == "Created hello.txt.", run
    # Its shell tool ran in the job's workspace on the worker; the artifact came back.
    assert [(a["path"], a["content"]) for a in run["artifacts"]] == [("hello.txt", "Hello")]
    folder = only_report(root) / run["dir"]
    assert (folder / "artifacts" / "hello.txt").read_text() == "Hello"
    transcript = json.loads((folder / "transcript.json").read_text())
    tools = [e["tool"] for e in transcript["entries"] if e["type"] == "tool"]
    assert [(t["name"], t["input"]["command"]) for t in tools] == [
        ("Bash", "printf Hello > hello.txt")
    ]
    server = manifest["modelServer"]
    assert server["unmatchedRequests"] == 0 and server["connectAttempts"] == [], server
