"""Repeated runs as a reader sees them: live rows, `axis reports ID` lines, `reports diff`."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from axis_eval.cli.live import LiveDisplay, PlainDisplay
from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import Plan
from axis_eval.report.models import ReportManifest
from axis_eval.report.outcome import exit_code_for
from axis_eval.report.render import render_report_detail
from axis_eval.runs.aggregate import PassGate
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter
from axis_eval.scoring.models import ScoreResult
from helpers.factories import score, withheld

MakeProject = Callable[..., Path]
Axis = Callable[..., Any]
Runs = Mapping[str, list[int | str | None]]
"""Scenario key → per run: a composite, ``None`` (withheld), ``"failed"`` or ``"ok"`` (unjudged)."""


def sc(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


def result(value: int | None) -> ScoreResult:
    """Goal one above and agent one below the composite, so the columns tell them apart."""
    if value is None:
        return withheld()
    return score(value, goal_achievement=min(100, value + 1), agent=max(0, value - 1))


def outcome_for(the_plan: Plan, runs: Runs, job_index: int) -> JobOutcome:
    job = the_plan.jobs[job_index]
    value = runs[job.scenario.key][job.run_index - 1]
    if value == "failed":
        return JobOutcome(spec=job, status="failed", failed=True, exit_code=1, error="boom")
    judged = None if value == "ok" else result(value)  # type: ignore[arg-type]
    return JobOutcome(spec=job, status="completed", failed=False, exit_code=0, score=judged)


def record(root: Path, runs: Runs, gate: PassGate | None = None) -> tuple[ReportManifest, Plan]:
    loaded = load_config(str(root))
    the_plan = plan(loaded, Selection())
    reports = reports_root(loaded.config_dir)
    writer = ReportWriter(
        ReportStore(reports / new_report_id(reports)), the_plan, loaded, gate=gate
    )
    for i in range(len(the_plan.jobs)):
        writer.record(outcome_for(the_plan, runs, i))
    manifest = writer.finish("finished", None)
    return writer.finish("finished", exit_code_for(manifest)), the_plan


def project(root: Path, make_project: MakeProject, runs: Runs) -> Path:
    scenarios = {k: sc(k, runs=len(v)) for k, v in runs.items()}
    return make_project(root, {"agents": ["codex"]}, scenarios)


def live_rows(the_plan: Plan, runs: Runs, upto: int | None = None) -> dict[str, str]:
    display = LiveDisplay()
    display.t.start(the_plan, "rid")
    for i in range(len(the_plan.jobs) if upto is None else upto):
        job = the_plan.jobs[i]
        display.phase(job, "running")
        display.finished(job, outcome_for(the_plan, runs, i))
    if upto is not None and upto < len(the_plan.jobs):
        display.phase(the_plan.jobs[upto], "running")
    return {p.key: p.progress() for p in display.t.pairs.values()}


SEED: Runs = {"seed": [81, 87, 92], "even": [87, 84, "failed"], "held": [80, None, 90]}


def test_live_rows_while_running_and_at_the_end(tmp_path: Path, make_project: MakeProject) -> None:
    root = project(tmp_path, make_project, {"post": [87, 84, 90]})
    the_plan = plan(load_config(str(root)))
    assert live_rows(the_plan, {"post": [87, 84, 90]}, upto=2) == {
        "post": "2/3 · med 86   [87✓ 84✓ ●]"
    }
    assert live_rows(the_plan, {"post": [87, 84, 90]}) == {"post": "3/3 · med 87   [87✓* 84✓ 90✓]"}


def test_live_final_row_equals_the_report_headline(
    tmp_path: Path, make_project: MakeProject
) -> None:
    root = project(tmp_path, make_project, SEED)
    manifest, the_plan = record(root, SEED)
    rows = live_rows(the_plan, SEED)
    assert rows == {
        "seed": "3/3 · med 87   [81✓ 87✓* 92✓]",
        "even": "2/3 · 87 (med 85.5)   [87✓* 84✓ ✗]",
        "held": "2/3 · 80 (med 85)   [80✓* ?✓ 90✓]",
    }
    display = LiveDisplay()
    display.t.start(the_plan, "rid")
    for i, job in enumerate(the_plan.jobs):
        display.finished(job, outcome_for(the_plan, SEED, i))
    for entry in manifest.results:
        live = display.t.pairs[(entry.scenario_key, entry.agent_name)]
        rep = live.representative()
        assert rep == entry.representative_run_index
        assert entry.score is not None and rep is not None
        assert live.scores[rep] == entry.score.axis_score
        assert f"{entry.score.axis_score}✓*" in live.progress()


def test_live_table_renders_the_progress_cell(tmp_path: Path, make_project: MakeProject) -> None:
    root = project(tmp_path, make_project, {"seed": [81, 87, 92]})
    the_plan = plan(load_config(str(root)))
    display = LiveDisplay()
    display.t.start(the_plan, "rid")
    display.header = "AXIS"
    for i, job in enumerate(the_plan.jobs):
        display.finished(job, outcome_for(the_plan, {"seed": [81, 87, 92]}, i))
    console = Console(file=io.StringIO(), width=140)
    console.print(display._render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "3/3 · med 87   [81✓ 87✓* 92✓]" in text


def test_plain_display_prints_the_pair_when_done(tmp_path: Path, make_project: MakeProject) -> None:
    root = project(tmp_path, make_project, {"seed": [81, 87, 92]})
    the_plan = plan(load_config(str(root)))
    out = io.StringIO()
    display = PlainDisplay(stream=out)
    display.start(the_plan, "rid")
    for i, job in enumerate(the_plan.jobs):
        display.finished(job, outcome_for(the_plan, {"seed": [81, 87, 92]}, i))
    assert out.getvalue().splitlines()[-1] == "    ↳ seed  codex  3/3 · med 87   [81✓ 87✓* 92✓]"


def test_reports_detail_lines(tmp_path: Path, make_project: MakeProject, axis: Axis) -> None:
    root = project(tmp_path, make_project, SEED)
    manifest, _ = record(root, SEED)
    assert manifest.exit_code == 0 and manifest.summary.runs_failed == 1
    text = axis("reports", manifest.report_id, cwd=root).stdout
    assert text == render_report_detail(manifest) + "\n"
    lines = text.splitlines()
    seed = next(i for i, line in enumerate(lines) if line.startswith("seed "))
    assert lines[seed].split()[:5] == ["seed", "codex", "✓", "pass", "3/3"]
    assert lines[seed].split()[5:10] == ["87", "88", "87", "87", "86"]
    assert lines[seed + 1] == "  ↳ 3 runs · representative #2 · median 87 · range 81-92 · σ 5.5"
    assert lines[seed + 2] == "    runs: #1 81, #2 87*, #3 92   (* representative)"
    assert lines[seed + 3] == "    3/3 scored · pass@3 1.00 · pass^3 1.00 · 3/3 ≥ 75"
    even = next(i for i, line in enumerate(lines) if line.startswith("even "))
    assert lines[even].split()[5] == "87", "the headline is the representative's composite"
    assert lines[even + 1] == "  ↳ 3 runs · representative #1 · median 85.5 · range 84-87 · σ 2.1"
    assert lines[even + 2] == "    runs: #1 87*, #2 84, #3 ✗   (* representative)"
    assert lines[even + 3] == "    2/3 scored · pass@3 1.00 · pass^3 0.00 · 2/3 ≥ 75"
    held = next(i for i, line in enumerate(lines) if line.startswith("held "))
    assert lines[held + 2] == "    runs: #1 80*, #2 withheld, #3 90   (* representative)"
    assert lines[held + 3].startswith("    2/2 scored (1 withheld) · pass@2 1.00 · pass^2 1.00")


def test_min_pass_rate_gate_fails_the_run(tmp_path: Path, make_project: MakeProject) -> None:
    runs: Runs = {"flaky": [80, 60, 90], "solid": [80, 85, 90]}
    root = project(tmp_path, make_project, runs)
    manifest, _ = record(root, runs, PassGate(pass_score=75, min_pass_rate=0.9))
    by_key = {p.scenario_key: p for p in manifest.results}
    assert by_key["flaky"].status == "failed" and by_key["solid"].status == "completed"
    assert manifest.summary.failed == 1 and manifest.exit_code == 1
    text = render_report_detail(manifest)
    assert "↳ pass rate 2/3 (score ≥ 75) is below --min-pass-rate 0.9" in text
    # without the gate one flaky run does not fail the suite
    relaxed, _ = record(root, runs)
    assert relaxed.exit_code == 0 and relaxed.summary.failed == 0


def test_reports_diff(tmp_path: Path, make_project: MakeProject, axis: Axis) -> None:
    root = project(tmp_path, make_project, {"seed": [81, 87, 92], "one": [80], "gone": [50]})
    a, _ = record(root, {"seed": [81, 87, 92], "one": [80], "gone": [50]})
    project(tmp_path, make_project, {"seed": [95, 96, 97], "one": [78], "fresh": [70]})
    (root / "scenarios" / "gone.json").unlink()
    b, _ = record(root, {"seed": [95, 96, 97], "one": [78], "fresh": [70]})
    assert {p.scenario_key for p in b.results} == {"seed", "one", "fresh"}

    out = axis("reports", "diff", a.report_id, b.report_id, cwd=root)
    assert out.exit_code == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"AXIS Report diff: {a.report_id} → {b.report_id}"
    rows = {line.split()[0]: line.split() for line in lines[4:] if line and line[0] != " "}
    assert rows["seed"][:9] == ["seed", "codex", "87", "96", "+9", "+9", "+9", "+9", "+9"]
    assert rows["seed"][9:] == ["±11.02", "unchanged", "+9.3", "[-3.8,", "22.4]"]
    assert rows["one"][2:5] == ["80", "78", "-2*"]
    assert rows["one"][9:] == ["±1", "(unmeasured)", "noise", "unmeasured", "-"]
    assert "New pairs (1): fresh × codex" in out.stdout
    assert "Vanished pairs (1): gone × codex" in out.stdout
    assert rows["fresh"][-2] == "new" and rows["gone"][-2] == "vanished"
    # Paired over seed (+9.33) and one (-2): mean 3.67, sd 8.01, t = 3.67/5.67 = 0.647 on
    # 1 df, p = 1 - 2·atan(0.647)/π = 0.634; half-width 12.706 × 5.67 = 72.0.
    paired = next(line for line in lines if line.startswith("Paired t test"))
    assert "over 2 pairs" in paired and "mean Δ +3.7 [-68.3, 75.7]" in paired, paired
    assert "t 0.647 (1 df), p = 0.6344" in paired, paired

    as_json = json.loads(
        axis("reports", "diff", a.report_id, b.report_id, "--json", cwd=root).stdout
    )
    assert as_json["reportA"] == a.report_id and as_json["reportB"] == b.report_id
    seed = next(p for p in as_json["pairs"] if p["scenarioKey"] == "seed")
    assert seed["verdict"] == "unchanged" and seed["noiseMeasured"] is True
    assert seed["deltas"][0] == {
        "name": "axisScore",
        "a": 87,
        "b": 96,
        "delta": 9,
        "noise": 11.02,
        "changed": False,
        # B − A of the means 96 − 86.67, Welch: se² = 30.33/3 + 1/3, df 2.13, t 4.06
        "interval": {"meanDelta": 9.33, "low": -3.78, "high": 22.45, "df": 2.13},
    }


def test_reports_keeps_list_and_show(tmp_path: Path, make_project: MakeProject, axis: Axis) -> None:
    root = project(tmp_path, make_project, {"seed": [81, 87, 92]})
    manifest, _ = record(root, {"seed": [81, 87, 92]})
    assert manifest.report_id in axis("reports", cwd=root).stdout
    assert axis("reports", "latest", cwd=root).stdout.startswith("AXIS Report:")
    bad = axis("reports", "diff", manifest.report_id, cwd=root)
    assert bad.exit_code == 2 and "reports diff [OPTIONS] A B" in bad.stderr
    assert axis("reports", "a", "b", cwd=root).exit_code == 2
