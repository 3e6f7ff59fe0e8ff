"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.processes import alive
from helpers.projects import (  # re-exported: this folder's tests import them from here
    base_environ as base_environ,
    cli_env as cli_env,
    only_report as only_report,
    report_dirs as report_dirs,
    run_api as run_api,
    start_cli as start_cli,
    write_project as write_project,
)

REPO = Path(__file__).resolve().parents[2]


SRC = REPO / "src"


AGENT = REPO / "tests" / "agents" / "run_agent.py"


def agent_command(mode: str) -> list[str]:
    """The argv prefix of the scriptable test agent in ``mode``."""
    return [sys.executable, str(AGENT), mode]


def ndjson_adapter(mode: str, *, stdin: bool = False, **extra: Any) -> dict[str, Any]:
    """A declarative adapter running the test agent in ``mode`` (NDJSON events)."""
    spec: dict[str, Any] = {
        "command": agent_command(mode),
        "args": [] if stdin else ["{prompt}"],
        "prompt_via": "stdin" if stdin else "argv",
        "output": "ndjson",
    }
    spec.update(extra)
    return spec


def scenario(**fields: Any) -> dict[str, Any]:
    """A scenario body (name, prompt and judge are filled in by :func:`write_project`)."""
    return fields


def run_cli(root: Path, *args: str, env: Mapping[str, str], timeout: float = 45) -> CliRun:
    """Run ``axis run -c root ARGS`` to the end."""
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "run", "-c", str(root), *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return CliRun(done.returncode, done.stdout, done.stderr)


@dataclass
class CliRun:
    exit_code: int
    stdout: str
    stderr: str


def launches(e2e_dir: Path) -> Counter[str]:
    """Lines the logging test agents appended to ``$E2E_DIR/exec.log``: one per launch."""
    log = e2e_dir / "exec.log"
    return Counter(log.read_text().splitlines() if log.exists() else [])


def runs_by_scenario(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``scenarioKey`` → its single run entry (for runs: 1 pairs with one agent)."""
    out: dict[str, dict[str, Any]] = {}
    for pair in manifest["results"]:
        assert len(pair["runs"]) == 1
        out[pair["scenarioKey"]] = pair["runs"][0]
    return out


def pids_file(e2e_dir: Path, scenario_key: str) -> Path:
    return e2e_dir / f"pids-{scenario_key.replace('/', '_').replace('@', '_')}.json"


def observed(e2e_dir: Path, **settings: Any) -> dict[str, Any]:
    """``settings`` for a project whose agents and lifecycle commands write their observation
    files to ``e2e_dir`` (``$E2E_DIR``): the job's sandbox (``auto``: bwrap here) lets them
    write there and nowhere else outside the job. ``settings`` are merged in."""
    return {"sandbox": {"writable": [str(e2e_dir)]}, **settings}


HOST_ONLY: dict[str, Any] = {"sandbox": "none"}
"""``settings`` of a test about host process control (job markers, the orphan machinery,
the sentinel, killing a host process tree): that is what contains a ``none`` job; the bwrap
namespace's equivalent is tests/execute/sandbox/test_hostile_sandbox.py."""


def auto_kind() -> str:
    """What ``sandbox: auto`` runs a job under on this machine (the report records it)."""
    from axis_eval.execute.sandbox.probe import bwrap_problem

    return "none" if bwrap_problem() else "bwrap"


def _environ(pid: str) -> list[bytes] | None:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None


def _pid_namespace(pid: str) -> tuple[str, int] | None:
    """``(pid namespace, pid in it)`` of a host process: its innermost namespace."""
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return namespace, int(line.split()[-1])
    return None


def host_pids(config_dir: Path, scenario_key: str, reported: Iterable[int]) -> list[int]:
    """The host pids of processes a job reported by their own pids (``os.getpid()``, ``$$``).

    Under bwrap a job's command lives in a PID namespace of its own: the pids it sees are not
    the host's. The host sees the same processes under other pids (the last field of
    ``NSpid`` is a process's pid in its innermost namespace). The job's processes are found
    by their environment, as :func:`job_processes` finds them; under ``none`` the namespace
    is the host's and each pid maps to itself. Call it while the processes run: a reported
    pid with no live host process (of that job, all in one namespace) fails the test.
    """
    wanted = list(reported)
    config = f"AXIS_CONFIG_DIR={config_dir}".encode()
    scenario = f"AXIS_SCENARIO={scenario_key}".encode()
    by_namespace: dict[str, dict[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        environ = _environ(name)
        if environ is None or config not in environ or scenario not in environ:
            continue
        inner = _pid_namespace(name)
        if inner is not None and alive(int(name)):
            by_namespace.setdefault(inner[0], {})[inner[1]] = int(name)
    matches = [pids for pids in by_namespace.values() if all(p in pids for p in wanted)]
    assert len(matches) == 1, (
        f"{scenario_key}: reported pids {wanted} are not the live processes of one namespace "
        f"of the job: {by_namespace}"
    )
    return [matches[0][p] for p in wanted]


def job_processes(folder: Path) -> list[int]:
    """Live processes of jobs whose config lives under ``folder`` (by ``AXIS_CONFIG_DIR``)."""
    prefix = f"AXIS_CONFIG_DIR={folder}".encode()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if any(e.startswith(prefix) for e in environ.split(b"\0")) and alive(int(name)):
            found.append(int(name))
    return found


@dataclass
class Procs:
    """Processes a test started; killed at teardown if still around."""

    popen: list[subprocess.Popen[bytes]] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)

    def add(self, proc: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
        self.popen.append(proc)
        return proc
