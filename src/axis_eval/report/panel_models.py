"""A panel's agreement in the report (``judging.panel``): the ``panel`` field of a pair
entry and of the summary.

Kept apart from :mod:`axis_eval.report.models` (at its size limit); absent in reports
written before panels existed and without a panel. The method is in docs/statistics.md
(Panels of judges) and :mod:`axis_eval.runs.agreement`.
"""

from pydantic import Field

from axis_eval._types import OutputModel
from axis_eval._util.defaults import empty_list


class MemberPairAlpha(OutputModel):
    """Krippendorff's alpha of two members alone, over the units both graded."""

    members: list[str]
    alpha: float | None = None
    units: int = 0


class FlaggedCheck(OutputModel):
    """A check of one run on which the panel's grades differ by more than the margin."""

    run_index: int
    check: str
    grades: dict[str, int] = Field(default_factory=dict)
    """Member → 0–10 grade (members that failed are absent)."""
    spread: float
    """Highest minus lowest grade, in points (grade × 10)."""
    scenario_key: str | None = None
    agent_name: str | None = None
    """Set in the summary's list, which spans the pairs."""


class PanelAgreement(OutputModel):
    """How far a panel's members agree on the check grades of a pair's runs (or, in the
    summary, of every pair's runs)."""

    members: list[str]
    units: int
    """Check grades (check × run) that two or more members graded: alpha's units."""
    alpha: float | None = None
    """Krippendorff's alpha, interval metric: 1 − D_o / D_e; 1 is perfect agreement, 0 is
    what chance would give. None with fewer than two grades in all."""
    pairs: list[MemberPairAlpha] = Field(default_factory=empty_list)
    """Alpha per pair of members."""
    margin: float
    """Points: a check whose grades (× 10) differ by more than this is flagged."""
    flagged: list[FlaggedCheck] = Field(default_factory=empty_list)
