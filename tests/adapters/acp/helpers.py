"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers import projects
from helpers.projects import (  # re-exported: this folder's tests import them from here
    base_environ as base_environ,
    cli_env as cli_env,
    only_report as only_report,
    run_api as run_api,
    start_cli as start_cli,
)

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
    adapters = {"fake-acp": str(FAKE_ADAPTER)} if adapters is None else adapters
    return projects.write_project(root, adapters, scenarios, agents=agents, **config)


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
