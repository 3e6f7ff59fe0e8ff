"""``axis baseline …``: output and exit codes, in-process (click's runner) and as a process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .helpers import pair, report, save

Axis = Callable[..., Any]


def two_reports(root: Path) -> None:
    save(root, report("2026-01-01-000000", pair("s", "a", 80, 85, 90), pair("t", "a", 70)))
    save(root, report("2026-01-02-000000", pair("s", "a", 70, 72, 74), pair("t", "a", 71)))


def test_set_defaults_to_the_latest_report(tmp_path: Path, axis: Axis) -> None:
    two_reports(tmp_path)
    done = axis("baseline", "set", cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    assert 'Baseline "default" updated — 2 scenario(s), 1 agent(s)' in done.stdout
    assert "Source: report 2026-01-02-000000" in done.stdout
    assert (tmp_path / ".axis" / "baselines" / "default.json").is_file()


def test_set_from_a_named_report_and_errors(tmp_path: Path, axis: Axis) -> None:
    assert axis("baseline", "set", cwd=tmp_path).exit_code == 1  # no reports yet
    two_reports(tmp_path)
    done = axis("baseline", "set", "main", "--from", "2026-01-01-000000", cwd=tmp_path)
    assert done.exit_code == 0 and "Source: report 2026-01-01-000000" in done.stdout
    done = axis("baseline", "set", "main", "--report", "nope", cwd=tmp_path)
    assert done.exit_code == 1 and "not found" in done.stderr
    done = axis("baseline", "set", "bad name", cwd=tmp_path)
    assert done.exit_code == 1 and 'Invalid baseline name "bad name"' in done.stderr


def test_list_show_delete(tmp_path: Path, axis: Axis) -> None:
    done = axis("baseline", "list", cwd=tmp_path)
    assert done.exit_code == 0
    assert "No baselines found. Use `axis baseline set` to create one." in done.stdout
    two_reports(tmp_path)
    axis("baseline", "set", "main", "--from", "2026-01-01-000000", cwd=tmp_path)
    done = axis("baseline", "list", cwd=tmp_path)
    assert "AXIS Baselines" in done.stdout and "main" in done.stdout
    done = axis("baseline", "show", "main", cwd=tmp_path)
    assert done.exit_code == 0 and "Baseline: main" in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("s "))
    assert " 85 " in row and "3/3" in row and "2026-01-01-000000" in row
    t_row = next(line for line in done.stdout.splitlines() if line.startswith("t "))
    assert "n/a" in t_row  # single run: σ unmeasured
    data = json.loads(axis("baseline", "show", "main", "--json", cwd=tmp_path).stdout)
    assert data["results"]["s"]["a"]["runScores"] == [80, 85, 90]
    assert data["results"]["s"]["a"]["stdev"] == 5
    assert axis("baseline", "show", "nope", cwd=tmp_path).exit_code == 1
    done = axis("baseline", "delete", "main", cwd=tmp_path)
    assert done.exit_code == 0 and 'Baseline "main" deleted.' in done.stdout
    done = axis("baseline", "delete", "main", cwd=tmp_path)
    assert done.exit_code == 1 and "not found" in done.stderr


def test_compare_exit_codes_in_process(tmp_path: Path, axis: Axis) -> None:
    two_reports(tmp_path)
    axis("baseline", "set", "--from", "2026-01-01-000000", cwd=tmp_path)
    same = axis("baseline", "compare", "--report", "2026-01-01-000000", cwd=tmp_path)
    assert same.exit_code == 0, same.stdout
    assert "0 improved, 0 regressed, 2 unchanged" in same.stdout
    worse = axis("baseline", "compare", "default", "--report", "latest", cwd=tmp_path)
    assert worse.exit_code == 1
    assert "REGRESSION s × a: 85 → 72 (-13)" in worse.stdout
    assert "goal 85→72 (-13)" in worse.stdout
    data = json.loads(axis("baseline", "compare", "--json", cwd=tmp_path).stdout)
    assert data["summary"]["regressed"] == 1
    assert {e["scenarioKey"]: e["verdict"] for e in data["entries"]} == {
        "s": "regressed",
        "t": "unchanged",
    }
    missing = axis("baseline", "compare", "other", cwd=tmp_path)
    assert missing.exit_code == 1 and 'Baseline "other" not found' in missing.stderr


def test_compare_exit_codes_as_a_process(tmp_path: Path, axis_process: Axis) -> None:
    two_reports(tmp_path)
    done = axis_process("baseline", "set", "--from", "2026-01-01-000000", cwd=tmp_path)
    assert done.exit_code == 0, done.stderr
    done = axis_process("baseline", "compare", cwd=tmp_path)
    assert done.exit_code == 1 and "REGRESSION s × a" in done.stdout
    done = axis_process("baseline", "compare", "--report", "2026-01-01-000000", cwd=tmp_path)
    assert done.exit_code == 0
    done = axis_process("baseline", "show", "no/pe", cwd=tmp_path)
    assert done.exit_code == 1 and "Invalid baseline name" in done.stderr


def test_run_offers_compare_baseline_and_schema_knows_baselines(axis: Axis) -> None:
    assert "--compare-baseline" in axis("run", "--help").stdout
    schema = json.loads(axis("schema", "baseline").stdout)
    assert "results" in schema["properties"]
