"""Adaptive repeats end to end (`axis run --runs auto`, `settings.runs: {min, max, target}`).

The agent is a shell command; deterministic `run` checks make its scores known (composite
0.4 × goal + 60): the steady scenario passes both checks every run (100, 100, 100: zero
spread, stops at min), the flaky one passes the second check on odd runs only (100, 80,
100, …: spread no target of 5 points can be met with 9 runs, so it runs to max).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from axis_eval.config.load import load_config
from axis_eval.config.models import AdaptiveRuns
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.runs.adaptive import next_round, stop_record
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter
from helpers.factories import score

Axis = Callable[..., Any]

MAKER = (
    'echo hi > out.txt; if [ "$AXIS_SCENARIO" != flaky ] || [ $((AXIS_RUN_INDEX % 2)) = 1 ];'
    " then echo bye >> out.txt; fi; echo made"
)
EXISTS = {"check": "out.txt exists", "run": "test -f out.txt", "weight": 0.5}
BYE = {"check": "out.txt says bye", "run": "grep -q bye out.txt", "weight": 0.5}


def project(root: Path, runs: Any = None) -> Path:
    root.mkdir(parents=True)
    config: dict[str, Any] = {
        "scenarios": "./scenarios",
        "agents": ["maker"],
        "adapters": {"maker": {"command": ["sh", "-c", MAKER], "args": [], "output": "text"}},
    }
    if runs is not None:
        config["settings"] = {"runs": runs}
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    for name in ("steady", "flaky"):
        body = {"name": name, "prompt": "do it", "judge": [EXISTS, BYE]}
        (root / "scenarios" / f"{name}.json").write_text(json.dumps(body))
    return root


def test_steady_pair_stops_at_min_and_flaky_pair_runs_to_max(tmp_path: Path, axis: Axis) -> None:
    root = project(tmp_path / "proj", runs={"min": 3, "max": 7, "target": 5})
    done = axis("run", cwd=root)
    assert done.exit_code == 0, done.stderr
    assert "adaptive repeats: 1 pair(s) still wider than their target" in done.stderr
    assert "[10/10] " in done.stderr and "7/7 · " in done.stderr  # the display grew too
    report = json.loads(axis("reports", "latest", "--json", cwd=root).stdout)
    by_key = {p["scenarioKey"]: p for p in report["results"]}
    steady, flaky = by_key["steady"], by_key["flaky"]
    assert [r["score"]["axisScore"] for r in steady["runs"]] == [100, 100, 100]
    assert steady["runCount"] == 3
    assert steady["adaptive"]["reason"] == "target reached"
    assert steady["adaptive"]["runs"] == 3 and steady["adaptive"]["width"] == 0
    assert [r["score"]["axisScore"] for r in flaky["runs"]] == [100, 80, 100, 80, 100, 80, 100]
    assert flaky["runCount"] == 7 and [r["runIndex"] for r in flaky["runs"]] == list(range(1, 8))
    assert flaky["adaptive"]["reason"] == "max reached"
    assert flaky["adaptive"]["looks"] == [3, 5, 7] and flaky["adaptive"]["width"] > 5
    # The terminal (and the HTML page, from the same lines) says where each pair stopped.
    shown = axis("reports", "latest", cwd=root).stdout
    assert "adaptive (t, target 5, up to 7): 3 runs, width 0 [100, 100]: target reached" in shown
    width = round(flaky["adaptive"]["width"], 1)
    assert f"adaptive (t, target 5, up to 7): 7 runs, width {width:g} [" in shown
    assert "]: max reached" in shown
    # Every run has its own folder and the representative is one of the final runs.
    assert all(
        (root / ".axis" / "reports" / report["reportId"] / r["dir"]).is_dir() for r in flaky["runs"]
    )
    assert flaky["representativeRunIndex"] in range(1, 8)
    assert flaky["intervals"]["axisScore"]["n"] == 7


def test_runs_auto_dry_run_plans_min_and_names_the_rule(tmp_path: Path, axis: Axis) -> None:
    root = project(tmp_path / "proj")
    done = axis("run", "--runs", "auto", "--dry-run", cwd=root)
    assert done.exit_code == 0, done.stderr
    assert "2 pairs, 6 jobs (up to 9 runs each)" in done.stdout
    assert (
        "note: adaptive repeats for 2 pair(s): 3 runs per pair first, then 2 more at a time "
        "while the composite's Bonferroni t 95 % interval is wider than 10 points, up to 9"
    ) in done.stderr
    as_json = json.loads(axis("run", "--runs", "auto", "--dry-run", "--json", cwd=root).stdout)
    assert {j["runIndex"] for j in as_json["jobs"]} == {1, 2, 3}
    assert any(n.startswith("note: adaptive repeats for 2 pair(s)") for n in as_json["notes"])


def test_runs_auto_refuses_no_score_and_bad_settings(tmp_path: Path, axis: Axis) -> None:
    root = project(tmp_path / "proj")
    done = axis("run", "--runs", "auto", "--no-score", cwd=root)
    assert done.exit_code == 2 and "--runs auto cannot be combined with --no-score" in done.stderr
    bad = axis("run", "--runs", "often", "--dry-run", cwd=root)
    assert bad.exit_code == 2 and "expected an odd integer from 1 to 19, or auto" in bad.stderr
    for runs, words in (
        ({"min": 1}, "expected min of at least 3 (an interval needs them), not 1"),
        ({"min": 5, "max": 3}, "expected max >= min, not max 3 below min 5"),
        ({"max": 8}, "odd run count"),
        ({"target": 0}, "target"),
    ):
        other = project(tmp_path / f"bad{len(words)}-{runs!s:.6}".replace(" ", ""), runs=runs)
        failed = axis("run", "--dry-run", cwd=other)
        assert failed.exit_code == 2, (runs, failed.stderr)
        assert words in failed.stderr and "settings.runs" in failed.stderr, failed.stderr


def test_cli_and_scenario_runs_win_over_adaptive_settings(tmp_path: Path, axis: Axis) -> None:
    root = project(tmp_path / "proj", runs={"min": 3, "max": 9, "target": 5})
    loaded = load_config(str(root))
    fixed = plan(loaded, Selection(runs=5))
    assert all(p.adaptive is None and p.run_count == 5 for p in fixed.pairs)
    auto = plan(loaded, Selection())
    assert all(p.adaptive == AdaptiveRuns(min=3, max=9, target=5) for p in auto.pairs)
    body = {"name": "steady", "prompt": "do it", "runs": 1, "judge": [EXISTS]}
    (root / "scenarios" / "steady.json").write_text(json.dumps(body))
    mixed = {p.scenario_key: p for p in plan(load_config(str(root)), Selection()).pairs}
    assert mixed["steady"].adaptive is None and mixed["steady"].run_count == 1
    assert mixed["flaky"].adaptive is not None


def test_next_round_is_run_major_with_new_numbers(tmp_path: Path) -> None:
    """Two wide pairs grow together: both pairs' run 4 before either's run 5."""
    root = project(tmp_path / "proj", runs={"min": 3, "max": 9, "target": 5})
    loaded = load_config(str(root))
    the_plan = plan(loaded, Selection())
    reports = reports_root(loaded.config_dir)
    writer = ReportWriter(ReportStore(reports / new_report_id(reports)), the_plan, loaded)
    for job in the_plan.jobs:
        value = 100 if job.run_index % 2 else 80
        writer.record(JobOutcome(spec=job, status="completed", failed=False, score=score(value)))
    rules = {(p.scenario_key, p.agent_name): p.adaptive for p in the_plan.pairs if p.adaptive}
    last = {j.pair_key: j for j in the_plan.jobs}
    jobs = next_round(writer.manifest.results, rules, last, 7)
    assert [(j.number, j.run_index, j.run_count) for j in jobs] == [
        (7, 4, 5),
        (8, 4, 5),
        (9, 5, 5),
        (10, 5, 5),
    ]
    assert [j.pair_key for j in jobs[:2]] == [j.pair_key for j in jobs[2:]]
    writer.add_jobs(jobs)
    assert writer.pending == jobs
    assert all(len(p.runs) == 5 and p.run_count == 5 for p in writer.manifest.results)


def test_resume_continues_an_adaptive_report_with_the_runs_it_grew(
    tmp_path: Path, axis: Axis
) -> None:
    """A run killed during the flaky pair's last round (runs 6 and 7 never finished)
    resumes with 7 runs planned for it and 3 for the steady pair, runs only the two left,
    and stops where a straight run stops."""
    root = project(tmp_path / "proj", runs={"min": 3, "max": 7, "target": 5})
    assert axis("run", cwd=root).exit_code == 0
    folder = next((root / ".axis" / "reports").iterdir())
    data = json.loads((folder / "report.json").read_text())
    data["state"] = "running"
    flaky = next(p for p in data["results"] if p["scenarioKey"] == "flaky")
    for run in flaky["runs"][5:]:
        (folder / run["dir"] / "result.json").unlink()
        run.update(status="cancelled", error="not started", score=None)
    flaky["adaptive"]["reason"] = None
    (folder / "report.json").write_text(json.dumps(data))
    resumed = axis("run", "--resume", folder.name, cwd=root)
    assert resumed.exit_code == 0, resumed.stderr
    assert "2 to run" in resumed.stderr and "adaptive repeats:" not in resumed.stderr
    after = {
        p["scenarioKey"]: p for p in json.loads((folder / "report.json").read_text())["results"]
    }
    assert [r["score"]["axisScore"] for r in after["flaky"]["runs"]] == [100, 80] * 3 + [100]
    assert after["flaky"]["adaptive"]["reason"] == "max reached"
    assert after["steady"]["runCount"] == 3 and after["steady"]["adaptive"]["runs"] == 3


def test_stop_records_say_why(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", runs={"min": 3, "max": 9, "target": 5})
    loaded = load_config(str(root))
    the_plan = plan(loaded, Selection())
    reports = reports_root(loaded.config_dir)
    writer = ReportWriter(ReportStore(reports / new_report_id(reports)), the_plan, loaded)
    for job in the_plan.jobs:
        if job.scenario.key == "steady":  # every run fails: no interval
            writer.record(JobOutcome(spec=job, status="failed", failed=True, error="boom"))
        else:
            value = 100 if job.run_index % 2 else 80
            writer.record(
                JobOutcome(spec=job, status="completed", failed=False, score=score(value))
            )
    rule = AdaptiveRuns(min=3, max=9, target=5)
    entries = {p.scenario_key: p for p in writer.manifest.results}
    failed = stop_record(entries["steady"], rule)
    assert (failed.reason, failed.runs, failed.scored, failed.width) == ("runs failed", 3, 0, None)
    assert stop_record(entries["flaky"], rule).reason is None  # wants 2 more
    assert stop_record(entries["flaky"], rule, stopped=True).reason == "run stopped"
    assert stop_record(entries["steady"], rule, running=True).reason is None
