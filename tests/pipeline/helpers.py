"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.processes import alive

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


def write_project(
    root: Path,
    adapters: Mapping[str, Any],
    scenarios: Mapping[str, Mapping[str, Any]],
    *,
    agents: list[Any] | None = None,
    **config: Any,
) -> Path:
    """Write ``axis.config.json`` and ``scenarios/<key>.json``; return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    body: dict[str, Any] = {
        "name": root.name,
        "scenarios": "./scenarios",
        "agents": agents if agents is not None else list(adapters),
        "adapters": dict(adapters),
        **config,
    }
    (root / "axis.config.json").write_text(json.dumps(body, indent=2))
    for key, scenario in scenarios.items():
        path = root / "scenarios" / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"name": key, "prompt": f"do {key}", "judge": "it worked", **scenario}
        path.write_text(json.dumps(data, indent=2))
    return root


def scenario(**fields: Any) -> dict[str, Any]:
    """A scenario body (name, prompt and judge are filled in by :func:`write_project`)."""
    return fields


def base_environ(**extra: str) -> dict[str, str]:
    """A small parent environment for a run (what a shell would give, plus ``extra``)."""
    names = ("PATH", "USER", "SHELL", "LANG", "TERM", "AXIS_AGENTS_DIR", "CI")
    env = {k: os.environ[k] for k in names if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(extra)
    return env


async def run_api(
    root: Path,
    environ: Mapping[str, str],
    *,
    concurrency: int | None = None,
    grace_s: float = 0.5,
) -> Any:
    """``axis run`` through the Python API, no signal handlers; returns the RunOutcome."""
    from axis_eval import RunOptions, load_config, run_async

    options = RunOptions(
        loaded=load_config(str(root)),
        concurrency=concurrency,
        grace_s=grace_s,
        environ=dict(environ),
        handle_signals=False,
        score=False,
    )
    return await run_async(options)


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of an ``axis`` child process."""
    return base_environ(PYTHONPATH=str(SRC), NO_COLOR="1", PYTHONUNBUFFERED="1", **extra)


def start_cli(
    root: Path, *args: str, env: Mapping[str, str], log: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start ``python -m axis_eval run -c root ARGS`` in its own session."""
    out = open(log or root / "axis-cli.log", "wb")  # noqa: SIM115 - closed by the child's exit
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "axis_eval", "run", "-c", str(root), *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        out.close()


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


def report_dirs(root: Path) -> list[Path]:
    """The report folders of a project, oldest first."""
    base = root / ".axis" / "reports"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def only_report(root: Path) -> Path:
    found = report_dirs(root)
    assert len(found) == 1, found
    return found[0]


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
