"""The light read of ``report.json`` behind the view's list, history and search.

A 1,000-job manifest is ~20 MB, most of it transcripts' neighbours: prompts, resolved
configs, judges' checks and audits. The list, the history charts and the search need a
few fields of each pair and run; :class:`Head` declares only those (every other field is
skipped unvalidated), so a report costs a fraction of its full read and holds a fraction
of its memory. Kept apart from :mod:`axis_eval.view.catalog` because pydantic models here
are compiled at import without ``from __future__ import annotations`` (tests/test_startup.py).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from axis_eval._types import JobStatus, ReportState, camel
from axis_eval._util.defaults import empty_list


class Light(BaseModel):
    model_config = ConfigDict(extra="ignore", alias_generator=camel, populate_by_name=True)


class ScoreHead(Light):
    """The five numbers of a score (``ScoreResult``'s names) and whether it was withheld."""

    axis_score: int | None = None
    goal_achievement: int | None = None
    environment: int | None = None
    service: int | None = None
    agent: int | None = None
    withheld: bool = False

    def dimension(self, name: str) -> int | None:
        """A dimension's score by name (``goal_achievement``, ``environment`` …)."""
        value: int | None = getattr(self, name)
        return value


class RunHead(Light):
    run_index: int
    status: JobStatus
    dir: str
    score: ScoreHead | None = None


class HeadPair(Light):
    scenario_key: str
    agent_name: str
    status: JobStatus
    run_count: int = 0
    representative_run_index: int | None = None
    score: ScoreHead | None = None
    runs: list[RunHead] = Field(default_factory=empty_list)


class HeadSummary(Light):
    runs_total: int = 0
    average_axis_score: float | None = None


class Head(Light):
    """What the list, history and search read of ``report.json`` (its required top-level
    fields as well, so a file that is not a manifest is left out as before)."""

    tool: dict[str, Any]
    report_id: str
    name: str | None = None
    state: ReportState = "running"
    started_at: str
    timestamp: str
    config_path: str
    config_dir: str
    profile: str | None = None
    summary: HeadSummary
    results: list[HeadPair] = Field(default_factory=empty_list)
