"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
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
