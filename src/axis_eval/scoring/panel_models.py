"""A panel's grades of one run (``judging.panel``): every member's grade of every check.

Referenced by :class:`~axis_eval.scoring.models.JudgeVerdicts` and
:class:`~axis_eval.scoring.models.ScoreResult` (``panel``); absent without a panel and in
files written before panels existed. The run's own check grades are the medians
(:mod:`axis_eval.scoring.panel`); the agreement is computed over these grades
(:mod:`axis_eval.runs.agreement`).
"""

from pydantic import Field

from axis_eval._types import OutputModel
from axis_eval._util.defaults import empty_list


class PanelCheck(OutputModel):
    """One judged check: each member's 0–10 grade, in ``members`` order (None: that member
    failed for good on this run)."""

    check: str
    grades: list[int | None]
    median: float | None = None
    """The median of the grades given (the run's grade before rounding half-up)."""


class PanelGrades(OutputModel):
    """Every panel member's grades of one run's judged checks (deterministic ones are not
    judged, so not here)."""

    members: list[str]
    """The members' labels (``anthropic:<model>`` or the judge agent's name)."""
    checks: list[PanelCheck] = Field(default_factory=empty_list)
    margin: float = 25.0
    """``judging.panelMargin`` when the run was judged: points (grade × 10)."""
    notes: list[str] = Field(default_factory=empty_list)
    """Members that failed on this run, left out of its medians."""
