"""The concurrency bound: the most jobs seen running at once equals ``--concurrency``."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import base_environ, ndjson_adapter, observed, run_api, scenario, write_project

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


def max_overlap(log: Path) -> int:
    """The largest number of agents between their ``start`` and ``end`` lines at once."""
    events: list[tuple[float, int]] = []
    for line in log.read_text().splitlines():
        kind, stamp, _ = line.split()
        # At equal times an end sorts first: a slot frees before the next job takes it.
        events.append((float(stamp), 1 if kind == "start" else -1))
    events.sort(key=lambda e: (e[0], e[1]))
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    return peak


async def test_six_jobs_at_concurrency_two_overlap_exactly_two(
    tmp_path: Path, e2e_dir: Path
) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"overlap": ndjson_adapter("overlap:0.7")},
        scenarios={f"job-{i}": scenario() for i in range(6)},
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    outcome = await run_api(root, base_environ(E2E_DIR=str(e2e_dir)), concurrency=2)
    manifest = read_json(outcome.report_dir / "report.json")
    assert manifest["summary"]["runsCompleted"] == 6, manifest["summary"]
    log = e2e_dir / "overlap.log"
    lines = log.read_text().splitlines()
    assert len(lines) == 12
    assert max_overlap(log) == 2
