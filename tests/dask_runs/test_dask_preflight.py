"""Pre-flight on a real cluster: before any job, every worker is checked for what the plan
needs (the pinned agent CLI, the variables its adapter declares, a ``slot``), and a scheduler
that cannot be reached is named. Each failure is exit 2, names the worker (or the address)
and what is missing, prints no traceback, and leaves no report and no launch behind."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from helpers.fake_bwrap import UNKNOWN_SIZE, unsized_bwrap
from helpers.projects import report_dirs
from helpers.system_parts import not_run
from pipeline.helpers import CliRun, cli_env, run_cli

from .conftest import DaskCluster, dask_env
from .helpers import claude_project, free_address, maker_project, worker_address

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _start(cluster: DaskCluster, name: str, env: dict[str, str], *, resources: bool = True) -> str:
    """Start a worker; its address."""
    return worker_address(cluster.start_worker(name, env, resources=resources).log)


def _refused_before_any_job(done: CliRun, root: Path) -> str:
    """The run failed pre-flight as a usage error; its output."""
    output = done.stdout + done.stderr
    assert done.exit_code == 2, output
    assert "Traceback" not in output, output
    assert report_dirs(root) == [], "pre-flight failed after the report opened"
    return output


def test_a_worker_without_the_pinned_cli_fails_preflight_by_name(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    from axis_eval.adapters.install import install_command, installed_binary

    if installed_binary("claude-code") is None:
        not_run("DASK PRE-FLIGHT (CLAUDE CODE)", f"run `{install_command(['claude-code'])}`")
    bare = tmp_path / "no-agents"
    bare.mkdir()
    # axis run's own environment has the pinned CLI (its local pre-flight passes); the
    # worker's AXIS_AGENTS_DIR is an empty folder, so on that worker only the CLI is missing.
    address = _start(dask_cluster, "bare", dask_env(AXIS_AGENTS_DIR=str(bare)))
    root = claude_project(tmp_path / "proj")
    started = time.monotonic()
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--tape", str(root / "tape.yaml"),
        "--no-score", env=cli_env(), timeout=90,
    )  # fmt: skip
    output = _refused_before_any_job(done, root)
    assert f"worker {address}" in output, output
    assert "'claude-code' agent's CLI (claude) is not installed" in output, output
    assert str(bare) in output, output  # where the worker looked (the install hint)
    assert time.monotonic() - started < 60


def test_a_worker_missing_a_declared_variable_fails_preflight_by_name(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    keyed = _start(dask_cluster, "keyed", dask_env(E2E_DIR=str(e2e), MAKER_KEY="on-keyed"))
    unkeyed = _start(dask_cluster, "unkeyed", dask_env(E2E_DIR=str(e2e)))
    root = maker_project(tmp_path / "proj", 2, e2e=e2e)
    config = json.loads((root / "axis.config.json").read_text())
    config["adapters"]["maker"]["required_env"] = ["MAKER_KEY"]
    hook = tmp_path / "before-all.txt"  # the cluster is checked before any hook runs
    config["beforeAll"] = [{"action": "run_script", "command": f"touch {hook}"}]
    (root / "axis.config.json").write_text(json.dumps(config))
    # axis run has the variable (its own pre-flight passes): a worker's jobs see the
    # worker's environment, not axis run's, so the worker without it is the one named.
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--no-score",
        env=cli_env(MAKER_KEY="on-axis-run"), timeout=90,
    )  # fmt: skip
    output = _refused_before_any_job(done, root)
    lines = [line for line in output.splitlines() if "MAKER_KEY" in line]
    assert len(lines) == 1, output
    assert f"worker {unkeyed}" in lines[0] and "'maker' agent" in lines[0], output
    assert keyed not in output, output
    assert not (e2e / "launches.log").exists(), "an agent was launched"
    assert not hook.exists(), "beforeAll ran before pre-flight"


def test_keys_only_the_workers_hold_are_enough(dask_cluster: DaskCluster, tmp_path: Path) -> None:
    """A scheduler's workers check their own variables and CLIs: ``axis run`` need not hold
    the agents' keys (they never travel), and its jobs see each worker's value."""
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    for name in ("a", "b"):
        _start(dask_cluster, name, dask_env(E2E_DIR=str(e2e), MAKER_KEY=f"key-{name}"))
    root = maker_project(tmp_path / "proj", 2, e2e=e2e)
    config = json.loads((root / "axis.config.json").read_text())
    config["adapters"]["maker"]["required_env"] = ["MAKER_KEY"]
    (root / "axis.config.json").write_text(json.dumps(config))
    done = run_cli(root, "--scheduler", dask_cluster.address, "--no-score", env=cli_env())
    assert done.exit_code == 0, done.stderr
    assert "MAKER_KEY" not in done.stderr
    assert len((e2e / "launches.log").read_text().splitlines()) == 2


def test_a_worker_that_cannot_unpack_the_bundle_is_named(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    worker = dask_cluster.start_worker("full", dask_env())
    address = worker_address(worker.log)
    # Where that worker unpacks bundles, a file: as a full disk or a read-only folder would,
    # unpacking fails on that worker, and pre-flight says which one.
    found = re.search(r"Local Directory:\s+(\S+)", worker.log.read_text())
    assert found, worker.log.read_text()
    (Path(found.group(1)) / "axis-bundles").write_text("in the way\n")
    root = maker_project(tmp_path / "proj", 1)
    done = run_cli(root, "--scheduler", dask_cluster.address, "--no-score", env=cli_env())
    output = _refused_before_any_job(done, root)
    assert f"worker {address}: cannot unpack the run's config folder under" in output, output


def test_a_worker_whose_bwrap_cannot_bound_a_tmpfs_runs_and_says_so(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    from axis_eval.execute.sandbox.probe import bwrap_problem

    if bwrap_problem() is not None:
        not_run("DASK PRE-FLIGHT (BWRAP)", bwrap_problem() or "")
    # That worker's PATH finds a FAKE old bwrap (refusing --size) first; axis run's does not.
    fakes = unsized_bwrap(tmp_path / "old-bwrap")
    env = dask_env()
    address = _start(dask_cluster, "old", {**env, "PATH": f"{fakes}:{env['PATH']}"})
    root = maker_project(tmp_path / "proj", 1)
    done = run_cli(root, "--scheduler", dask_cluster.address, "--no-score", env=cli_env())
    output = done.stdout + done.stderr
    assert done.exit_code in (0, 1), output  # it ran (one of the checks fails by design)
    lines = [line for line in output.splitlines() if "cannot bound a tmpfs" in line]
    assert len(lines) == 1, output
    assert f"worker {address}" in lines[0] and UNKNOWN_SIZE in lines[0], output
    assert report_dirs(root), "the run did not go on"


def test_no_worker_with_a_slot_fails_preflight(dask_cluster: DaskCluster, tmp_path: Path) -> None:
    _start(dask_cluster, "slotless", dask_env(), resources=False)
    root = maker_project(tmp_path / "proj", 1)
    done = run_cli(root, "--scheduler", dask_cluster.address, "--no-score", env=cli_env())
    output = _refused_before_any_job(done, root)
    assert f"no Dask worker at {dask_cluster.address} advertises the `slot` resource" in output
    assert "--resources slot=N" in output, output


def test_an_unreachable_scheduler_is_named_at_once(tmp_path: Path) -> None:
    root = maker_project(tmp_path / "proj", 1)
    nowhere = free_address()
    started = time.monotonic()
    done = run_cli(root, "--scheduler", nowhere, "--no-score", env=cli_env())
    output = _refused_before_any_job(done, root)
    assert f"cannot reach the Dask scheduler at {nowhere}" in output, output
    # Nothing listens there: a refused connection is final, not retried for 20 s.
    assert time.monotonic() - started < 15


def test_a_dry_run_reaches_no_cluster(tmp_path: Path) -> None:
    root = maker_project(tmp_path / "proj", 2)
    done = run_cli(root, "--dry-run", "--scheduler", free_address(), env=cli_env())
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "2 jobs" in done.stdout and "s01       maker" in done.stdout, done.stdout
    assert "Dask" not in done.stdout + done.stderr
    assert report_dirs(root) == []


def test_without_dask_installed_the_dask_executor_is_a_preflight_error(tmp_path: Path) -> None:
    """Dask is an extra: a machine without it gets the install command, exit 2."""
    root = maker_project(tmp_path / "proj", 1)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    # A `distributed` that cannot be imported, first on the path (as where it is missing).
    (blocked / "distributed.py").write_text("raise ImportError('no Dask here')\n")
    env = cli_env()
    env["PYTHONPATH"] = f"{blocked}:{env['PYTHONPATH']}"
    done = run_cli(root, "--workers", "1", env=env, timeout=60)
    output = _refused_before_any_job(done, root)
    assert "pip install 'axis-eval[dask]'" in output, output
