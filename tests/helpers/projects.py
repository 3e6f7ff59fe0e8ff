"""Projects on disk and ``axis run`` around them, for the end-to-end tests of several folders
(``tests/pipeline``, ``tests/adapters/acp``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"


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


def base_environ(**extra: str) -> dict[str, str]:
    """A small parent environment for a run (what a shell would give, plus ``extra``)."""
    names = (
        "PATH",
        "USER",
        "SHELL",
        "LANG",
        "TERM",
        "AXIS_AGENTS_DIR",
        "AXIS_SANDBOX_READABLE",
        "CI",
    )
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


def report_dirs(root: Path) -> list[Path]:
    """The report folders of a project, oldest first."""
    base = root / ".axis" / "reports"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def only_report(root: Path) -> Path:
    found = report_dirs(root)
    assert len(found) == 1, found
    return found[0]
