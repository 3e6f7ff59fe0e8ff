"""Issue 19 end to end: intervals and the machine's load in a real `axis run`, and the load
warning beside speed-scored runs in `axis reports ID`, its HTML page and the run summary.

The agent is a shell command (a declarative adapter); the deterministic checks make its
scores known: run 2 writes "bye", so 3 runs score 80, 100, 80 (composite 0.4 × goal + 60).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome, MachineLoad
from axis_eval.planning.matrix import Selection, plan
from axis_eval.report.outcome import exit_code_for
from axis_eval.report.render import render_report_detail, render_run_summary
from axis_eval.report.verdicts import verdicts
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter
from axis_eval.scoring.models import CategoryScore
from helpers.factories import score

Axis = Callable[..., Any]

MAKER = 'echo hi > out.txt; if [ "$AXIS_RUN_INDEX" = 2 ]; then echo bye >> out.txt; fi; echo made'
EXISTS = {"check": "out.txt exists", "run": "test -f out.txt", "weight": 0.5}
BYE = {"check": "out.txt says bye", "run": "grep -q bye out.txt", "weight": 0.5}


def project(root: Path) -> Path:
    root.mkdir(parents=True)
    config = {
        "scenarios": "./scenarios",
        "agents": ["maker"],
        "adapters": {"maker": {"command": ["sh", "-c", MAKER], "args": [], "output": "text"}},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    body = {"name": "flaky", "prompt": "do it", "runs": 3, "judge": [EXISTS, BYE]}
    (root / "scenarios" / "flaky.json").write_text(json.dumps(body))
    return root


def test_a_real_run_records_load_and_intervals(
    tmp_path: Path, axis: Axis, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "proj")
    monkeypatch.setattr(os, "getloadavg", lambda: (1234.5, 0.0, 0.0))
    done = axis("run", cwd=root)
    assert done.exit_code == 0, done.stderr
    report = json.loads(axis("reports", "latest", "--json", cwd=root).stdout)
    (entry,) = report["results"]
    assert [r["score"]["axisScore"] for r in entry["runs"]] == [80, 100, 80]
    for run in entry["runs"]:
        assert run["machine"] == {
            "loadStart": 1234.5,
            "loadEnd": 1234.5,
            "cpusStart": os.cpu_count(),
            "cpusEnd": os.cpu_count(),
        }
        assert run["executor"] == "local" and run["sandbox"] in ("none", "bwrap", "docker")
    # A text agent has no interactions: no speed signal was scored, so no load warning.
    assert entry["loadWarning"] is None
    # 80, 100, 80: mean 86.67, s = 11.547, se = 6.667, half = 4.3027 × 6.667 = 28.68
    axis_iv = entry["intervals"]["axisScore"]
    assert axis_iv["low"] == pytest.approx(57.98, abs=0.01) and axis_iv["high"] == 100
    assert (axis_iv["medianLow"], axis_iv["medianHigh"]) == (80, 100)
    assert entry["intervals"]["environment"]["low"] == 100, "no interactions: 100 every run"
    (agent,) = report["summary"]["agentIntervals"]
    assert agent["clusters"] == 1 and agent["low"] is None and "needs 2" in agent["note"]
    summary = done.stderr + done.stdout
    assert "95% t (mean, n=3): AXIS 86.7 [58, 100]" in summary
    assert "median AXIS 80 [80, 100] (order statistics, 75.0% coverage)" in summary
    assert "⚠ load" not in summary
    shown = axis("reports", "latest", cwd=root).stdout
    assert "95% t (mean, n=3): AXIS 86.7 [58, 100]" in shown
    assert "maker 86.7 (1 scenario, 3 runs): 1 scenario scored" in shown


def timed(value: int) -> Any:
    """A score whose Environment speed signal was scored (two interactions in it)."""
    env = CategoryScore(score=value, raw=0.8, interactions=2, weakest_signal="speed")
    return score(value, categories={"environment": env})


def test_load_warning_beside_speed_scored_runs(tmp_path: Path, axis: Axis) -> None:
    root = project(tmp_path / "proj")
    loaded = load_config(str(root))
    the_plan = plan(loaded, Selection())
    reports = reports_root(loaded.config_dir)
    writer = ReportWriter(ReportStore(reports / new_report_id(reports)), the_plan, loaded)
    machines = [
        MachineLoad(load_start=5.2, load_end=3.1, cpus_start=2, cpus_end=2),  # overloaded
        MachineLoad(load_start=1.5, load_end=1.9, cpus_start=2, cpus_end=2),  # kept up
        MachineLoad(load_start=1.0, load_end=2.5, cpus_start=2, cpus_end=2),  # at the end
    ]
    for job, machine in zip(the_plan.jobs, machines, strict=True):
        writer.record(
            JobOutcome(spec=job, status="completed", failed=False, score=timed(70), machine=machine)
        )
    manifest = writer.finish("finished", None)
    manifest = writer.finish("finished", exit_code_for(manifest))
    (entry,) = manifest.results
    assert entry.load_warning == (
        "load 5.2 on 2 cores during run #1: Env speed signals are inflated (slow timings "
        "measure the machine)\n"
        "load 2.5 on 2 cores during run #3: Env speed signals are inflated (slow timings "
        "measure the machine)"
    )
    summary = render_run_summary(verdicts(manifest, tmp_path))
    assert "    ⚠ load 5.2 on 2 cores during run #1: Env speed signals are inflated" in summary
    assert "run #2" not in summary
    shown = axis("reports", manifest.report_id, cwd=root).stdout
    assert shown == render_report_detail(manifest) + "\n"
    assert "⚠ load 2.5 on 2 cores during run #3" in shown
    page = axis("reports", manifest.report_id, "--html", str(tmp_path / "p.html"), cwd=root)
    assert page.exit_code == 0, page.stderr
    html = (tmp_path / "p.html").read_text()
    assert "Machine overloaded during runs" in html
    assert "flaky · maker: load 5.2 on 2 cores during run #1" in html
