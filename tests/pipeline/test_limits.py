"""Token limits per job, and the run-level token and time budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import (
    base_environ,
    ndjson_adapter,
    observed,
    run_api,
    runs_by_scenario,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


async def test_scenario_token_limit_stops_that_job(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"spender": ndjson_adapter("tokens:100"), "chatty": ndjson_adapter("chatter:500")},
        agents=["spender", "chatty"],
        scenarios={
            # usage events: the agent's own numbers
            "capped": scenario(agents=["spender"], limits={"tokens": 1000}),
            # no usage at all: the live estimate (characters / 5) is what counts
            "estimated": scenario(agents=["chatty"], limits={"tokens": 800}),
            "fine": scenario(agents=["spender"], prompt="x", limits={"time_minutes": 0.01}),
        },
    )
    outcome = await run_api(root, base_environ())
    manifest = read_json(outcome.report_dir / "report.json")
    runs = runs_by_scenario(manifest)
    capped = runs["capped"]
    assert capped["status"] == "failed"
    assert capped["errorKind"] == "token_limit"
    assert capped["error"] == "Scenario token limit reached (1000 tokens)"
    assert 1000 <= capped["tokenUsage"]["input"] < 3000
    estimated = runs["estimated"]
    assert estimated["errorKind"] == "token_limit", estimated
    assert estimated["error"] == "Scenario token limit reached (800 tokens)"
    # The third job is stopped by its own time limit, not by a token limit.
    assert runs["fine"]["errorKind"] == "timeout"


async def test_run_token_budget_stops_the_whole_run(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"spender": ndjson_adapter("tokens:100")},
        scenarios={"a": scenario(), "b": scenario(), "c": scenario()},
        settings={"limits": {"run": {"tokens": 1500}}},
    )
    outcome = await run_api(root, base_environ(), concurrency=2)
    manifest = read_json(outcome.report_dir / "report.json")
    runs = runs_by_scenario(manifest)
    message = "Overall token limit reached (1500 tokens)"
    assert {r["errorKind"] for r in runs.values()} == {"run_limit"}, runs
    assert {r["error"] for r in runs.values()} == {message}
    # The two running jobs were stopped (failed); the third never started.
    assert sorted(r["status"] for r in runs.values()) == ["cancelled", "failed", "failed"]
    assert manifest["state"] == "finished"
    assert outcome.exit_code == 1


async def test_run_time_budget_stops_the_whole_run(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"sleeper": ndjson_adapter("slow:30")},
        scenarios={"a": scenario(), "b": scenario(), "c": scenario()},
        settings={"limits": {"run": {"time_minutes": 0.02}}},
    )
    outcome = await run_api(root, base_environ(), concurrency=2)
    manifest = read_json(outcome.report_dir / "report.json")
    runs = runs_by_scenario(manifest)
    for run in runs.values():
        assert run["errorKind"] == "run_limit", run
        assert run["error"].startswith("Overall time limit reached"), run["error"]
    assert sorted(r["status"] for r in runs.values()) == ["cancelled", "failed", "failed"]
    # Stopped after ~1.2 s, not after the agents' 30 s.
    assert manifest["durationMs"] < 15_000


async def test_run_time_budget_also_stops_a_job_in_setup(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={
            "setup-forever": scenario(
                setup=[{"action": "run_script", "command": "sleep 60"}],
                teardown=[{"action": "run_script", "command": 'touch "$E2E_DIR/torn-down"'}],
            )
        },
        env=["E2E_DIR"],
        settings=observed(e2e_dir, limits={"run": {"time_minutes": 0.02}}),
    )
    outcome = await run_api(root, base_environ(E2E_DIR=str(e2e_dir)))
    manifest = read_json(outcome.report_dir / "report.json")
    run = runs_by_scenario(manifest)["setup-forever"]
    assert run["status"] == "cancelled"
    assert run["errorKind"] == "run_limit"
    assert run["error"].startswith("Overall time limit reached")
    assert manifest["durationMs"] < 15_000
    assert (e2e_dir / "torn-down").exists()
