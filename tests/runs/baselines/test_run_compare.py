"""``axis run --compare-baseline``: compare after the run, exit 1 on regression."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
Axis = Callable[..., Any]


def quickstart(tmp_path: Path) -> Path:
    project = tmp_path / "quickstart"
    shutil.copytree(
        REPO / "examples" / "quickstart", project, ignore=shutil.ignore_patterns(".axis")
    )
    return project


def rewrite_scores(project: Path, name: str, value: int) -> None:
    path = project / ".axis" / "baselines" / f"{name}.json"
    data = json.loads(path.read_text())
    for agents in data["results"].values():
        for entry in agents.values():
            entry["axisScore"] = value
            entry["runScores"] = [value]
    path.write_text(json.dumps(data))


def test_run_compares_with_the_baseline(tmp_path: Path, axis_process: Axis) -> None:
    project = quickstart(tmp_path)
    args = ("run", "-a", "toy", "-s", "hello-world")
    first = axis_process(*args, cwd=project)
    assert first.exit_code == 0, first.stderr
    assert axis_process("baseline", "set", "ci", cwd=project).exit_code == 0

    rewrite_scores(project, "ci", 0)  # the baseline was far worse: an improvement
    better = axis_process(*args, "--compare-baseline", "ci", cwd=project)
    assert better.exit_code == 0, better.stderr
    assert "Baseline: ci" in better.stderr and "1 improved, 0 regressed" in better.stderr

    rewrite_scores(project, "ci", 100)  # the baseline was perfect: a regression
    worse = axis_process(*args, "--compare-baseline", "ci", cwd=project)
    assert worse.exit_code == 1
    assert "REGRESSION hello-world × toy: 100 →" in worse.stderr
    assert "noise unmeasured" in worse.stderr

    missing = axis_process(*args, "--compare-baseline", cwd=project)  # bare: `default`
    assert missing.exit_code == 1 and 'Baseline "default" not found' in missing.stderr

    skipped = axis_process(*args, "--no-score", "--compare-baseline", "ci", cwd=project)
    assert skipped.exit_code == 0
    assert "warning: --compare-baseline ci skipped" in skipped.stderr
