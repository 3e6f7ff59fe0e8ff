"""Scoring inside `axis run` and `axis score` re-scoring, with deterministic checks only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import SRC, cli_env, only_report, run_cli

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


def project(root: Path, weights: dict[str, float] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, object] = {
        "scenarios": "./scenarios",
        "agents": ["maker"],
        "adapters": {
            "maker": {
                "command": ["sh", "-c", "echo hi > out.txt; echo made out.txt"],
                "args": [],
                "output": "text",
            }
        },
    }
    if weights:
        config["settings"] = {"scoring_weights": weights}
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir(exist_ok=True)
    scenario = {
        "name": "make a file",
        "prompt": "Create out.txt",
        "judge": [
            {"check": "out.txt exists", "run": "test -f out.txt", "weight": 0.5},
            {"check": "out.txt says bye", "run": "grep -q bye out.txt", "weight": 0.5},
        ],
    }
    (root / "scenarios" / "make.json").write_text(json.dumps(scenario))
    return root


def test_deterministic_checks_score_a_run_without_any_judge(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    done = run_cli(root, env=cli_env())
    assert done.exit_code == 0, done.stderr
    manifest = read_json(only_report(root) / "report.json")
    score = manifest["results"][0]["runs"][0]["score"]
    checks = {c["check"]: c for c in score["checks"]}
    assert checks["out.txt exists"]["score"] == 10 and checks["out.txt exists"]["exitCode"] == 0
    assert checks["out.txt says bye"]["score"] == 0
    # Goal 50 (half the weight passed); no interactions: every category scores 100.
    # Composite = 50 × 0.4 + 100 × 0.2 × 3 = 80.
    assert (score["goalAchievement"], score["environment"], score["service"], score["agent"]) == (
        50,
        100,
        100,
        100,
    )
    assert score["axisScore"] == 80
    assert score["judge"] is None or score["judge"]["calls"] == 0


def test_axis_score_recomputes_with_new_weights_and_no_judge_calls(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    assert run_cli(root, env=cli_env()).exit_code == 0
    report = only_report(root)
    project(root, weights={"goal_achievement": 1.0, "environment": 0, "service": 0, "agent": 0})
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "score", report.name, "-c", str(root), "--json"],
        env={**cli_env(), "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "judge calls: 0" in done.stderr
    manifest = json.loads(done.stdout)
    assert manifest["results"][0]["runs"][0]["score"]["axisScore"] == 50  # goal only now
    on_disk = read_json(report / "report.json")
    assert on_disk["results"][0]["score"]["axisScore"] == 50
    run_dir = report / on_disk["results"][0]["runs"][0]["dir"]
    assert read_json(run_dir / "result.json")["run"]["score"]["axisScore"] == 50
