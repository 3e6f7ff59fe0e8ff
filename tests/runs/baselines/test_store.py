"""Baseline files: names, set (merge), list, delete, atomic writes; built from real reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.load import load_config
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.runs.baselines import (
    BaselineError,
    baselines_root,
    delete_baseline,
    list_baselines,
    load_baseline,
    read_baseline,
    set_baseline,
    validate_name,
)
from axis_eval.runs.store import ReportStore, new_report_id, read_report, reports_root
from axis_eval.runs.writer import ReportWriter
from helpers.factories import score

from .helpers import pair, report


@pytest.mark.parametrize("name", ["default", "a", "A_b-9", "x" * 64])
def test_valid_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "x" * 65, "a b", "../x", "a.json", "é", "a/b"])
def test_invalid_names(name: str, tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="Invalid baseline name"):
        validate_name(name)
    with pytest.raises(BaselineError):
        read_baseline(tmp_path, name)


def test_set_merges_pairs_with_a_score_and_keeps_the_others(tmp_path: Path) -> None:
    first = report("2026-01-01-000000", pair("s", "a", 80), pair("t", "a", 70, 72, 74))
    base, merged = set_baseline(tmp_path, first)
    assert merged == 2 and base.pair_count() == 2
    created = base.created_at
    second = report(
        "2026-01-02-000000",
        pair("s", "a", 90),  # overwrites
        pair("t", "a", "fail", "fail", "fail"),  # no score: the old entry is kept
        pair("u", "b", 60),  # added
    )
    base, merged = set_baseline(tmp_path, second)
    assert merged == 2
    on_disk = load_baseline(tmp_path)
    assert on_disk == base and on_disk.created_at == created
    assert on_disk.results["s"]["a"].axis_score == 90
    assert on_disk.results["s"]["a"].from_report_id == "2026-01-02-000000"
    assert on_disk.results["t"]["a"].axis_score == 72
    assert on_disk.results["t"]["a"].from_report_id == "2026-01-01-000000"
    assert on_disk.results["u"]["b"].axis_score == 60
    # Pretty JSON with a newline, nothing left behind by the atomic write.
    folder = baselines_root(tmp_path)
    assert [p.name for p in folder.iterdir()] == ["default.json"]
    assert (folder / "default.json").read_text().endswith("}\n")


def test_set_with_nothing_scored_creates_an_empty_baseline_once(tmp_path: Path) -> None:
    base, merged = set_baseline(tmp_path, report("r1", pair("s", "a", "fail")), "empty")
    assert merged == 0 and base.results == {}
    assert read_baseline(tmp_path, "empty") is not None


def test_list_and_delete(tmp_path: Path) -> None:
    assert list_baselines(tmp_path) == []
    set_baseline(tmp_path, report("r1", pair("s", "a", 80)), "one")
    set_baseline(tmp_path, report("r1", pair("s", "a", 80)), "two")
    (baselines_root(tmp_path) / "junk.json").write_text("{not json")
    assert {b.name for b in list_baselines(tmp_path)} == {"one", "two"}
    assert delete_baseline(tmp_path, "one") is True
    assert delete_baseline(tmp_path, "one") is False
    assert [b.name for b in list_baselines(tmp_path)] == ["two"]
    with pytest.raises(BaselineError, match='Baseline "one" not found'):
        load_baseline(tmp_path, "one")


def test_baseline_from_a_report_written_by_the_writer(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"a": {"name": "A", "prompt": "do A", "judge": "done", "runs": 3}},
    )
    loaded = load_config(str(tmp_path))
    the_plan = plan(loaded, Selection())
    root = reports_root(loaded.config_dir)
    store = ReportStore(root / new_report_id(root))
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    composites = {1: 81, 2: 87, 3: 92}
    for job in the_plan.jobs:
        fields: dict[str, Any] = {
            "status": "completed",
            "failed": False,
            "exit_code": 0,
            "started_at": "2026-01-01T00:00:00.000Z",
            "ended_at": "2026-01-01T00:00:01.000Z",
            "duration_ms": 1000,
            "score": score(composites[job.run_index]),
        }
        writer.record(JobOutcome(spec=job, **fields))
    writer.finish("finished", 0)
    manifest = read_report(loaded.config_dir)
    base, merged = set_baseline(loaded.config_dir, manifest)
    entry = base.results["a"]["codex"]
    assert merged == 1
    assert entry.axis_score == 87 and entry.runs == 3 and entry.run_scores == [81, 87, 92]
    assert entry.stdev == 5.51 and entry.reliability is not None
    assert (entry.reliability.succeeded, entry.reliability.total) == (3, 3)
    raw = json.loads((baselines_root(loaded.config_dir) / "default.json").read_text())
    assert set(raw) == {"name", "createdAt", "updatedAt", "results"}
