"""The judge's own spread (``axis score ID --rejudge K``), apart from the runs' spread.

Each scored run's stored transcript is judged K more times, so run ``i`` has ``m_i = K + 1``
grades of one and the same transcript (the stored grade and K new ones): whatever moves
them is the judge alone. Per pair and per score (docs/statistics.md, Re-judging):

- **judge spread** σ_judge: the pooled within-transcript sample standard deviation,
  ``sqrt(Σ (m_i − 1)·s_i² / Σ (m_i − 1))``, ``s_i²`` the sample variance (``m_i − 1``
  denominator) of run ``i``'s grades. With the same K for every run it is the square root of
  the mean of the runs' variances. One-way random-effects ANOVA's within-group term.
- **runs' spread** σ_runs: the sample standard deviation of the runs' stored grades (the
  spread the report always showed; None below two runs).
- **judge share**: ``σ_judge² / σ_runs²`` capped to 0–1. Each run's stored grade is one
  judge draw on that run's transcript, so the runs' variance holds the agent's and the
  judge's: the share says how much of what moved between runs the judge alone would
  move. Sampling noise can make the estimate exceed 1 (few runs, few re-judgments): it is
  capped. σ_runs = 0 with σ_judge > 0 reads 1; both 0 (or no runs' spread) gives None.

A baseline made from a re-judged report keeps σ_judge of the composite, and
``--compare-baseline`` sizes its band ``max(1, 2·sqrt(σ_runs² + σ_judge²))``
(:func:`combined_band`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from axis_eval._types import SCORES, camel
from axis_eval.report.judge_noise_models import JudgeNoise, RejudgedRun, ScoreNoise
from axis_eval.scoring.models import ScoreResult


def pooled_stdev(groups: Sequence[Sequence[float]]) -> float | None:
    """Pooled within-group sample stdev over groups of 2+ values; None without any."""
    used = [g for g in groups if len(g) >= 2]
    df = sum(len(g) - 1 for g in used)
    if df == 0:
        return None
    within = sum((len(g) - 1) * statistics.variance(g) for g in used)
    return math.sqrt(within / df)


def judge_share(judge_sd: float | None, runs_sd: float | None) -> float | None:
    """``judge_sd² / runs_sd²`` capped to 0–1 (see the module docstring for the edges)."""
    if judge_sd is None or runs_sd is None:
        return None
    if runs_sd == 0:
        return 1.0 if judge_sd > 0 else None
    return min(1.0, max(0.0, judge_sd**2 / runs_sd**2))


def combined_band(runs_sd: float | None, judge_sd: float | None) -> float:
    """The baseline noise band: ``max(1, 2·sqrt(σ_runs² + σ_judge²))`` over what was
    measured (an unmeasured term counts 0); 1 when neither was."""
    if runs_sd is None and judge_sd is None:
        return 1.0
    return max(1.0, 2 * math.sqrt((runs_sd or 0.0) ** 2 + (judge_sd or 0.0) ** 2))


def _usable(score: ScoreResult | None) -> bool:
    return score is not None and not score.withheld and score.axis_score is not None


def judge_noise(
    stored: Mapping[int, ScoreResult | None],
    rejudged: Mapping[int, Sequence[ScoreResult]],
    *,
    rejudge: int,
    judge: str | None = None,
    simulated: bool = False,
) -> JudgeNoise | None:
    """A pair's judge noise from its runs' stored scores (by run index) and their new
    judgments; None when no run was re-judged. A withheld new judgment is left out (and
    noted); a run left with its stored grade alone adds nothing to σ_judge."""
    out = JudgeNoise(rejudge=rejudge, runs=0, judge=judge, simulated=simulated)
    for index in sorted(stored):
        first = stored[index]
        if not _usable(first) or index not in rejudged:
            continue
        assert first is not None
        new = [s for s in rejudged[index] if _usable(s)]
        if len(new) < len(rejudged[index]):
            out.notes.append(
                f"run #{index}: {len(rejudged[index]) - len(new)} of {rejudge} re-judgments "
                "withheld, left out"
            )
        grades: dict[str, list[int]] = {}
        for name in SCORES:
            values = [s.dimension(name) for s in (first, *new)]
            grades[camel(name)] = [v for v in values if v is not None]
        out.grades.append(RejudgedRun(run_index=index, grades=grades))
        out.runs += 1
    if not out.grades:
        return None
    for name in SCORES:
        key = camel(name)
        per_run = [[float(v) for v in g.grades.get(key, [])] for g in out.grades]
        firsts = [
            float(v)
            for s in stored.values()
            if s is not None and _usable(s) and (v := s.dimension(name)) is not None
        ]
        j = pooled_stdev(per_run)
        r = statistics.stdev(firsts) if len(firsts) >= 2 else None
        out.scores[key] = ScoreNoise(
            judge_stdev=None if j is None else round(j, 2),
            runs_stdev=None if r is None else round(r, 2),
            judge_share=None if (share := judge_share(j, r)) is None else round(share, 4),
        )
    return out
