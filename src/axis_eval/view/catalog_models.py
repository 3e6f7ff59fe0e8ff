"""The light read of ``report.json`` behind the view's list: its headline fields only.

Kept apart from :mod:`axis_eval.view.catalog` because pydantic models here are compiled at
import without ``from __future__ import annotations`` (tests/test_startup.py).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from axis_eval._types import JobStatus, ReportState, camel
from axis_eval._util.defaults import empty_list


class Light(BaseModel):
    model_config = ConfigDict(extra="ignore", alias_generator=camel, populate_by_name=True)


class HeadPair(Light):
    scenario_key: str
    agent_name: str
    status: JobStatus


class HeadSummary(Light):
    runs_total: int = 0
    average_axis_score: float | None = None


class Head(Light):
    """What the list shows of ``report.json`` (its required top-level fields as well, so a
    file that is not a manifest is left out as before); every other field is skipped."""

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
