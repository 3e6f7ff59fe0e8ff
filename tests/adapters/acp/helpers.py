"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]


SRC = REPO / "src"


HERE = Path(__file__).resolve().parent


FAKE_ADAPTER = HERE / "fake_adapter.py"


def write_project(
    root: Path,
    scenarios: Mapping[str, Mapping[str, Any]],
    *,
    adapters: Mapping[str, Any] | None = None,
    agents: list[Any] | None = None,
    **config: Any,
) -> Path:
    """``axis.config.json`` (default: the fake ACP adapter) and ``scenarios/<key>.json``."""
    root.mkdir(parents=True, exist_ok=True)
    adapters = {"fake-acp": str(FAKE_ADAPTER)} if adapters is None else adapters
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
    env = {k: os.environ[k] for k in ("PATH", "USER", "SHELL", "LANG", "TERM") if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(extra)
    return env


async def run_api(root: Path, environ: Mapping[str, str], *, grace_s: float = 0.5) -> Any:
    """``axis run`` through the Python API (no signal handlers, no scoring)."""
    from axis_eval import RunOptions, load_config, run_async

    options = RunOptions(
        loaded=load_config(str(root)),
        grace_s=grace_s,
        environ=dict(environ),
        handle_signals=False,
        score=False,
    )
    return await run_async(options)


def cli_env(**extra: str) -> dict[str, str]:
    return base_environ(PYTHONPATH=str(SRC), NO_COLOR="1", PYTHONUNBUFFERED="1", **extra)


def start_cli(root: Path, *args: str, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """``python -m axis_eval run -c root ARGS`` in its own session, output to a log."""
    with open(root / "axis-cli.log", "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "axis_eval", "run", "-c", str(root), *args],
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def only_report(root: Path) -> Path:
    base = root / ".axis" / "reports"
    found = sorted(p for p in base.iterdir() if p.is_dir())
    assert len(found) == 1, found
    return found[0]


def runs_by_key(manifest: Mapping[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["scenarioKey"], p["agentName"]): p["runs"][0] for p in manifest["results"]}


def tools(transcript: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [e["tool"] for e in transcript["entries"] if e.get("tool")]


def agent_cli(name: str, monkeypatch: pytest.MonkeyPatch, *, required: bool = True) -> str:
    """The pinned CLI of built-in ``name``; skips loudly when missing (fails when CI=true
    and ``required``).

    Without ``AXIS_AGENTS_DIR`` the project's own cache (``.cache/agents``) is used when
    it exists.
    """
    from axis_eval.adapters import install

    if not os.environ.get("AXIS_AGENTS_DIR") and (REPO / ".cache" / "agents").is_dir():
        monkeypatch.setenv("AXIS_AGENTS_DIR", str(REPO / ".cache" / "agents"))
    binary = install.installed_binary(name)
    if binary is None:
        message = (
            f"the {name} CLI is not installed: run `axis agents install {name}` "
            f"(AXIS_AGENTS_DIR={install.agents_dir()})"
        )
        if required and os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return str(binary)


def model_server_module() -> Any:
    """``axis_model_server``; skips loudly when missing (fails when CI=true)."""
    try:
        import axis_model_server
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"axis_model_server is not importable: {exc}")
        pytest.skip(f"axis_model_server is not importable: {exc}")
    return axis_model_server
