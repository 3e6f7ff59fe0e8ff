"""Ctrl-C and SIGTERM on `axis run`, and report files that survive a SIGKILL whole."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.processes import alive, read_json, wait_dead, wait_for

from .helpers import (
    Procs,
    cli_env,
    host_pids,
    ndjson_adapter,
    observed,
    pids_file,
    report_dirs,
    scenario,
    start_cli,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


def running_report(root: Path) -> dict[str, Any] | None:
    """The manifest once the run has written it with state ``running``, else None."""
    found = report_dirs(root)
    if not found or not (found[0] / "report.json").exists():
        return None
    manifest: dict[str, Any] = read_json(found[0] / "report.json")
    return manifest if manifest["state"] == "running" else None


def start_sleepers(
    root: Path, e2e_dir: Path, procs: Procs, *, mode: str, grace: str
) -> tuple[subprocess.Popen[bytes], list[Path], list[int]]:
    """Three sleeping jobs at concurrency 2; returns once two agents have started."""
    write_project(
        root,
        adapters={"sleeper": ndjson_adapter(mode)},
        scenarios={"a": scenario(), "b": scenario(), "c": scenario()},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
        afterAll=[{"action": "run_script", "command": "echo $AXIS_TOTAL > after-all.txt"}],
    )
    axis = procs.add(
        start_cli(
            root,
            "--concurrency",
            "2",
            "--grace-seconds",
            grace,
            env=cli_env(E2E_DIR=str(e2e_dir)),
        )
    )
    files = [pids_file(e2e_dir, key) for key in ("a", "b", "c")]
    wait_for(lambda: running_report(root), timeout=20, what="report.json in state running")
    started = wait_for(
        lambda: [f for f in files if f.exists()] if sum(f.exists() for f in files) >= 2 else None,
        timeout=20,
        what="two agents to start",
    )
    # The agents' own pids (of their PID namespace under bwrap) as the host sees them.
    pids = [pid for f in started for pid in host_pids(root, key_of(f), read_json(f).values())]
    procs.pids.extend(pids)
    assert all(alive(p) for p in pids)
    return axis, started, pids


def key_of(pids: Path) -> str:
    """The scenario key of a ``pids-<key>.json`` file (the keys here have no ``/`` or ``@``)."""
    return pids.name.removeprefix("pids-").removesuffix(".json")


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_first_signal_cancels_running_jobs_and_writes_the_report(
    tmp_path: Path, e2e_dir: Path, procs: Procs, sig: signal.Signals, code: int
) -> None:
    root = tmp_path / "proj"
    axis, started, pids = start_sleepers(root, e2e_dir, procs, mode="sleep", grace="1")
    axis.send_signal(sig)
    assert axis.wait(timeout=30) == code
    wait_dead(pids, timeout=5.0)

    output = (root / "axis-cli.log").read_text()
    assert f"{sig.name} received" in output
    report = report_dirs(root)[0]
    manifest = read_json(report / "report.json")
    assert manifest["state"] == "interrupted"
    assert manifest["exitCode"] == code
    runs = {p["scenarioKey"]: p["runs"][0] for p in manifest["results"]}
    assert {r["status"] for r in runs.values()} == {"cancelled"}
    assert {r["errorKind"] for r in runs.values()} == {"cancelled"}
    started_keys = {key_of(f) for f in started}
    for key in started_keys:
        run = runs[key]
        assert run["error"] == f"Run cancelled by {sig.name}"
        # The partial transcript is kept.
        transcript = read_json(report / run["dir"] / "transcript.json")
        assert any(e.get("text") == "started, now sleeping" for e in transcript["entries"])
    assert manifest["summary"]["cancelled"] == 3
    assert manifest["summary"]["completed"] == 0
    # afterAll runs once per `axis run`, interrupted or not (it is where cleanup lives).
    assert (root / "after-all.txt").read_text().strip() == "3"


def test_second_sigint_exits_at_once(tmp_path: Path, e2e_dir: Path, procs: Procs) -> None:
    root = tmp_path / "proj"
    # The agents ignore SIGTERM and the grace period is long: the first Ctrl-C alone
    # would keep `axis run` waiting for a minute.
    axis, _, pids = start_sleepers(root, e2e_dir, procs, mode="stubborn", grace="60")
    axis.send_signal(signal.SIGINT)
    log = root / "axis-cli.log"
    wait_for(lambda: "SIGINT received" in log.read_text(), timeout=10, what="the first SIGINT")
    axis.send_signal(signal.SIGINT)
    assert axis.wait(timeout=5) == 130
    # Even so, the watchdog leaves no agent behind.
    wait_dead(pids, timeout=5.0)
    # And the report does not say `running`: one last write before the exit.
    manifest = read_json(report_dirs(root)[0] / "report.json")
    assert manifest["state"] == "interrupted" and manifest["exitCode"] == 130


def test_report_files_are_whole_after_a_sigkill(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("slow:0.1")},
        scenarios={f"job-{i:02d}": scenario() for i in range(40)},
    )
    axis = procs.add(start_cli(root, "--concurrency", "4", env=cli_env()))

    def completed() -> int:
        found = report_dirs(root)
        if not found or not (found[0] / "report.json").exists():
            return 0
        try:
            return int(read_json(found[0] / "report.json")["summary"]["runsCompleted"])
        except ValueError as exc:  # a torn report.json: exactly what must never happen
            raise AssertionError("report.json was read half-written") from exc

    wait_for(lambda: completed() >= 8, timeout=30, interval=0.01, what="8 finished jobs")
    axis.send_signal(signal.SIGKILL)
    axis.wait(timeout=10)

    report = report_dirs(root)[0]
    for path in report.rglob("*"):
        if path.is_file() and path.suffix == ".tmp":
            # Only a write the kill interrupted may leave a temporary file.
            assert path.name.startswith("."), path
        elif path.suffix == ".json":
            json.loads(path.read_text())  # every JSON file parses
    manifest = read_json(report / "report.json")
    assert manifest["state"] == "running"
    runs = {p["scenarioKey"]: p["runs"][0] for p in manifest["results"]}
    assert len(runs) == 40
    statuses = [r["status"] for r in runs.values()]
    assert set(statuses) <= {"completed", "cancelled"}
    assert 8 <= statuses.count("completed") < 40
    for run in runs.values():
        result = report / run["dir"] / "result.json"
        if run["status"] == "completed":
            # A run the manifest lists as finished has its files on disk.
            assert read_json(result)["run"]["status"] == "completed"
            assert (report / run["dir"] / "transcript.json").is_file()
        else:
            assert run["error"] == "not started" or result.exists()


def test_sigint_during_a_long_setup_cancels_it_and_still_tears_down(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={
            "slow-setup": scenario(
                setup=[
                    {
                        "action": "run_script",
                        "command": 'echo seeding >> "$AXIS_OUTPUT"; '
                        'echo $$ > "$E2E_DIR/setup.pid"; sleep 60',
                    },
                    {"action": "run_script", "command": 'touch "$E2E_DIR/second-step"'},
                ],
                teardown=[{"action": "run_script", "command": 'touch "$E2E_DIR/torn-down"'}],
            )
        },
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    axis = procs.add(start_cli(root, "--grace-seconds", "1", env=cli_env(E2E_DIR=str(e2e_dir))))
    pid_file = e2e_dir / "setup.pid"
    wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=20)
    [shell] = host_pids(root, "slow-setup", [int(pid_file.read_text())])
    procs.pids.append(shell)
    axis.send_signal(signal.SIGINT)
    # Not the 60 s the setup command would take.
    assert axis.wait(timeout=15) == 130
    wait_dead([shell], timeout=5.0)
    assert (e2e_dir / "torn-down").exists()  # teardown released what setup made
    assert not (e2e_dir / "second-step").exists()
    manifest = read_json(report_dirs(root)[0] / "report.json")
    run = manifest["results"][0]["runs"][0]
    assert run["status"] == "cancelled"
    assert run["error"] == "Run cancelled by SIGINT"
    assert run["setupOutput"] == "seeding"
