"""Shared helpers: tiny projects written into tmp_path, and two ways to run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings

SRC = Path(__file__).resolve().parents[1] / "src"

# Pinned agent CLIs: the project cache `make agents` fills (unless the caller chose another).
os.environ.setdefault("AXIS_AGENTS_DIR", str(SRC.parent / ".cache" / "agents"))
# The test agents, fixtures and MCP servers live in this checkout, which CI may clone under
# /tmp (hidden from bwrap jobs): confined jobs may read it, as a project's own would be.
os.environ.setdefault("AXIS_SANDBOX_READABLE", str(SRC.parent))

# Fuzz tests (hypothesis) run a derandomized, bounded profile by default, so `make test`
# is reproducible and fast; `HYPOTHESIS_PROFILE=long .venv/bin/pytest -m fuzz` searches far
# wider by hand. Tests that want fewer examples than the profile set their own `settings`.
settings.register_profile(
    "ci", derandomize=True, max_examples=60, deadline=None, print_blob=True, database=None
)
settings.register_profile(
    "long",
    max_examples=5_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def write_project(
    root: Path,
    config: Mapping[str, Any] | str,
    scenarios: Mapping[str, Mapping[str, Any] | str] | None = None,
    *,
    config_name: str = "axis.config.json",
) -> Path:
    """Write ``config`` and ``scenarios`` under ``root``; return ``root``.

    ``config`` is a dict (serialized by the suffix of ``config_name``) or raw text.
    ``scenarios`` maps a path relative to ``root/scenarios`` (``a/b.json``; no suffix means
    ``.json``) to a dict (serialized by suffix) or raw text.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / config_name).write_text(_dump(config, config_name))
    (root / "scenarios").mkdir(exist_ok=True)
    for rel, body in (scenarios or {}).items():
        name = rel if Path(rel).suffix else f"{rel}.json"
        path = root / "scenarios" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump(body, name))
    return root


def _dump(body: Mapping[str, Any] | str, name: str) -> str:
    if isinstance(body, str):
        return body
    if name.endswith((".yaml", ".yml")):
        return str(yaml.safe_dump(dict(body), sort_keys=False))
    return json.dumps(body, indent=2)


@pytest.fixture
def make_project() -> Callable[..., Path]:
    """``make_project(tmp_path, config, scenarios)`` → the project folder."""
    return write_project


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


def _invoke(args: list[str], cwd: Path | None) -> CliResult:
    from click.testing import CliRunner

    from axis_eval.cli.main import cli

    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return CliResult(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def axis() -> Callable[..., CliResult]:
    """Run ``axis ARGS`` in-process (click's runner); an unexpected exception propagates."""

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        return _invoke(list(args), cwd)

    return run


@pytest.fixture
def axis_process() -> Callable[..., CliResult]:
    """Run ``python -m axis_eval ARGS`` in a child process: real exit codes and stderr."""

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "axis_eval", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return CliResult(done.returncode, done.stdout, done.stderr)

    return run
