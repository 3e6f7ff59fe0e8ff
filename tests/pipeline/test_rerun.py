"""Re-running: ``axis run --failed [ID]`` and ``axis run --resume ID`` (after a SIGKILL)."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from axis_eval.runs.store import read_manifest
from helpers.processes import read_json, wait_for

from .helpers import (
    AGENT,
    Procs,
    cli_env,
    launches,
    observed,
    only_report,
    report_dirs,
    run_cli,
    scenario,
    start_cli,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


def logging_adapter(mode: str) -> dict[str, Any]:
    """The test agent behind a shell that logs each execution to ``$E2E_DIR/exec.log``.

    A scenario whose key starts with ``bad`` fails (exit 3) until ``$E2E_DIR/fixed`` exists.
    """
    script = (
        'echo "$AXIS_SCENARIO $AXIS_RUN_INDEX" >> "$E2E_DIR/exec.log"; '
        'if [ ! -e "$E2E_DIR/fixed" ]; then case "$AXIS_SCENARIO" in '
        "bad*) echo broken >&2; exit 3;; esac; fi; "
        f'exec "{sys.executable}" "{AGENT}" {mode} "$1"'
    )
    return {
        "command": ["sh", "-c", script, "sh"],
        "args": ["{prompt}"],
        "prompt_via": "argv",
        "output": "ndjson",
    }


def test_failed_reruns_exactly_the_failed_pairs(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"logger": logging_adapter("quick")},
        scenarios={"good": scenario(), "bad": scenario(runs=3)},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    first = run_cli(root, "--no-score", env=env)
    assert first.exit_code == 1, first.stderr
    first_id = only_report(root).name
    assert launches(e2e_dir) == Counter({"good 1": 1, "bad 1": 1, "bad 2": 1, "bad 3": 1})

    (e2e_dir / "fixed").touch()
    again = run_cli(root, "--no-score", "--failed", env=env)
    assert again.exit_code == 0, again.stderr
    assert launches(e2e_dir) == Counter({"good 1": 1, "bad 1": 2, "bad 2": 2, "bad 3": 2})
    new = [d for d in report_dirs(root) if d.name != first_id]
    assert len(new) == 1
    manifest = read_manifest(new[0])
    assert [(p.scenario_key, len(p.runs), p.status) for p in manifest.results] == [
        ("bad", 3, "completed")
    ]
    assert manifest.state == "finished"
    assert manifest.exit_code == 0

    # The explicit id of the first report works too, and its failure still re-runs.
    (e2e_dir / "fixed").unlink()
    third = run_cli(root, "--no-score", "--failed", first_id, env=env)
    assert third.exit_code == 1, third.stderr
    assert launches(e2e_dir)["good 1"] == 1
    assert launches(e2e_dir)["bad 1"] == 3


def test_failed_with_nothing_to_retry_exits_0(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"logger": logging_adapter("quick")},
        scenarios={"good": scenario()},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    assert run_cli(root, "--no-score", env=env).exit_code == 0
    report_id = only_report(root).name
    done = run_cli(root, "--no-score", "--failed", env=env)
    assert done.exit_code == 0
    assert f"No failed jobs in report {report_id}. Nothing to retry." in done.stderr
    assert launches(e2e_dir) == Counter({"good 1": 1})
    assert len(report_dirs(root)) == 1


def test_failed_with_a_selection_is_a_usage_error(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"logger": logging_adapter("quick")},
        scenarios={"good": scenario()},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    assert run_cli(root, "--failed", "-s", "good", env=env).exit_code == 2
    assert run_cli(root, "--resume", "latest", "-a", "logger", env=env).exit_code == 2
    assert not launches(e2e_dir)


def test_resume_after_sigkill_keeps_finished_jobs(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    keys = ["s1", "s2", "s3", "s4"]
    root = write_project(
        tmp_path / "proj",
        adapters={"logger": logging_adapter("slow:0.6")},
        scenarios={k: scenario() for k in keys},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    axis = procs.add(start_cli(root, "--no-score", "--concurrency", "1", env=env))

    def first_result() -> Path | None:
        found = report_dirs(root)
        if not found:
            return None
        hits = list(found[0].glob("scenarios/*/logger/result.json"))
        return found[0] if hits else None

    folder = wait_for(first_result, timeout=30, what="the first job's result.json")
    axis.send_signal(signal.SIGKILL)
    axis.wait(timeout=10)
    before = read_json(folder / "report.json")
    assert before["state"] == "running"
    finished = {p.parent.parent.name for p in folder.glob("scenarios/*/logger/result.json")}
    assert finished and len(finished) < len(keys)
    ran_before = launches(e2e_dir)

    resumed = run_cli(root, "--no-score", "--resume", folder.name, env=env, timeout=60)
    assert resumed.exit_code == 0, resumed.stderr
    # --no-score: the kept runs stay unscored, and the output and the report say how to fix it.
    note = (
        f"{len(finished)} run(s) kept from before the interruption are not scored (--no-score); "
        f"`axis score {folder.name}` scores them"
    )
    assert f"note: {note}" in resumed.stderr
    assert only_report(root) == folder
    after = launches(e2e_dir)
    for key in finished:
        assert after[f"{key} 1"] == ran_before[f"{key} 1"] == 1, (key, after)
    assert set(after) == {f"{k} 1" for k in keys}
    manifest = read_manifest(folder)
    assert manifest.state == "finished"
    assert manifest.exit_code == 0
    assert manifest.config_hash
    assert sorted(p.scenario_key for p in manifest.results) == keys
    assert all(p.status == "completed" for p in manifest.results)
    assert manifest.summary.completed == len(keys)
    assert note in manifest.warnings
    for key in keys:
        saved = read_json(folder / f"scenarios/{key}/logger/result.json")
        assert saved["run"]["status"] == "completed"
        assert saved["run"].get("score") is None


def test_resume_refuses_a_changed_config_unless_forced(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"logger": logging_adapter("quick")},
        scenarios={"good": scenario(), "bad": scenario()},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    assert run_cli(root, "--no-score", env=env).exit_code == 1
    folder = only_report(root)
    config = root / "axis.config.json"
    body = json.loads(config.read_text())
    body["settings"]["concurrency"] = 3
    config.write_text(json.dumps(body))

    refused = run_cli(root, "--no-score", "--resume", folder.name, env=env)
    assert refused.exit_code == 2
    assert "config changed" in refused.stderr
    assert "--force" in refused.stderr

    forced = run_cli(root, "--no-score", "--resume", folder.name, "--force", env=env)
    # Nothing was unfinished: the failed run is kept as it is (--failed re-runs it).
    assert forced.exit_code == 1, forced.stderr
    assert launches(e2e_dir) == Counter({"good 1": 1, "bad 1": 1})
    manifest = read_manifest(folder)
    assert manifest.state == "finished"
    assert len(report_dirs(root)) == 1
