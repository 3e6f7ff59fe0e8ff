"""Re-judging in the report (``axis score ID --rejudge K``): the judge's own spread.

Referenced by :class:`axis_eval.report.models.PairEntry` (``judgeNoise``); absent in
reports written before re-judging existed, and in pairs never re-judged. The method is in
docs/statistics.md (Re-judging) and :mod:`axis_eval.runs.judge_noise`.
"""

from pydantic import Field

from axis_eval._types import OutputModel
from axis_eval._util.defaults import empty_list


class RejudgedRun(OutputModel):
    """One run's grades of the same stored transcript: the stored grade first, then the K
    new ones, per score (``axisScore``, ``goalAchievement``, ``environment`` …)."""

    run_index: int
    grades: dict[str, list[int]] = Field(default_factory=dict)


class ScoreNoise(OutputModel):
    """One score of a pair: the judge's spread beside the runs' spread."""

    judge_stdev: float | None = None
    """Pooled within-transcript sample stdev: ``sqrt(Σ (m_i − 1)·s_i² / Σ (m_i − 1))`` over
    the re-judged runs, ``m_i`` grades of run ``i`` with sample variance ``s_i²``."""
    runs_stdev: float | None = None
    """Sample stdev (n − 1) of the runs' stored grades; None below two runs."""
    judge_share: float | None = None
    """``judge variance / runs' variance``, capped to 0–1 (the runs' variance holds the
    judge's: each run's grade is one judge draw). None without runs' spread; 1 when the
    runs agree exactly and the judge does not."""


class JudgeNoise(OutputModel):
    """A pair re-judged K more times per scored run."""

    rejudge: int
    """K: new judgments of each run's stored transcript (each run has K + 1 grades)."""
    runs: int
    """Runs re-judged (scored, not withheld, every new judgment not withheld)."""
    judge: str | None = None
    """Who re-judged (``anthropic:model`` or the judge agent's name)."""
    simulated: bool = False
    """The re-judging asked the scripted model server: no money spent."""
    scores: dict[str, ScoreNoise] = Field(default_factory=dict)
    """By score (``axisScore`` and the four dimensions)."""
    grades: list[RejudgedRun] = Field(default_factory=empty_list)
    notes: list[str] = Field(default_factory=empty_list)
    """What was left out (withheld re-judgments, runs with a single grade)."""
