"""What the live display is given: every finished run as the report holds it (``RunEntry``),
whether it just ran or a resumed report kept it."""

from __future__ import annotations

from pathlib import Path

import pytest

from axis_eval import load_config
from axis_eval.execute.job import JobContext
from axis_eval.execute.models import JobOutcome
from axis_eval.pipeline import RunOptions, run_async
from axis_eval.planning.models import JobSpec
from axis_eval.progress import JobView, NullDisplay
from axis_eval.report.models import RunEntry

from .helpers import ndjson_adapter, scenario, write_project

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


class Recorder(NullDisplay):
    def __init__(self) -> None:
        self.seen: list[tuple[str, JobView]] = []

    def finished(self, job: JobSpec, view: JobView) -> None:
        self.seen.append((job.scenario.key, view))


class Scripted:
    """An executor that runs nothing: each job ends as ``statuses`` says (default completed)."""

    capacity = 1
    remote = False

    def __init__(self, statuses: dict[str, str] | None = None) -> None:
        self.statuses = statuses or {}
        self.closed = False

    async def prepare(self, plan: object, environ: object, **run: object) -> list[str]:
        return []

    async def aclose(self) -> None:
        self.closed = True

    async def execute(self, spec: JobSpec, ctx: JobContext) -> JobOutcome:
        status = self.statuses.get(spec.scenario.key, "completed")
        return JobOutcome(
            spec=spec,
            status=status,
            failed=False,
            error="stopped" if status == "cancelled" else None,
            duration_ms=7,
            result=f"done {spec.scenario.key}",
        )


def options(root: Path, executor: Scripted, display: Recorder, **extra: object) -> RunOptions:
    return RunOptions(
        loaded=load_config(str(root)),
        score=False,
        executor=executor,
        display=display,
        environ={"PATH": "/usr/bin:/bin"},
        handle_signals=False,
        **extra,  # type: ignore[arg-type]
    )


def runs_by_key(entries: list[tuple[str, JobView]]) -> dict[str, JobView]:
    return dict(entries)


async def test_fresh_and_kept_runs_reach_the_display_as_run_entries(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "p", {"toy": ndjson_adapter("ok")}, {"a": scenario(), "b": scenario()}
    )
    first = Recorder()
    done = await run_async(options(root, Scripted({"b": "cancelled"}), first))
    shown = runs_by_key(first.seen)
    assert sorted(shown) == ["a", "b"]
    assert all(isinstance(v, RunEntry) for v in shown.values())
    in_report = {p.scenario_key: p.runs[0] for p in done.manifest.results}
    assert shown == in_report  # exactly what report.json says about each run

    second = Recorder()
    resumed = await run_async(options(root, Scripted(), second, resume=done.manifest))
    shown = runs_by_key(second.seen)
    assert sorted(shown) == ["a", "b"]  # a: kept and shown as it was; b: run now
    assert all(isinstance(v, RunEntry) for v in shown.values())
    assert shown["a"] == in_report["a"]
    assert (shown["b"].status, shown["b"].error) == ("completed", None)
    assert {p.scenario_key: p.runs[0] for p in resumed.manifest.results} == shown
