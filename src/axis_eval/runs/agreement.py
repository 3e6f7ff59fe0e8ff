"""How far a panel of judges agrees: Krippendorff's alpha over the check grades.

A **unit** is one judged check of one run (check × run); the **coders** are the panel's
members; a value is a member's grade of that check × 10 (points, 0–100). A member that
failed on a run leaves its values there missing. With the interval metric δ(a, b) = (a − b)²,
over the *pairable* units (two or more values; m_u values in unit u, n = Σ m_u in all):

- observed disagreement D_o = (1 / n) · Σ_u [ Σ_{i≠j in u} (v_i − v_j)² / (m_u − 1) ];
- expected disagreement D_e = Σ_{i≠j over all n values} (v_i − v_j)² / (n · (n − 1));
- alpha = 1 − D_o / D_e.

Alpha is 1 when the members always agree, about 0 when their grades are as far apart within
a unit as between random values, and below 0 when they disagree systematically. When every
value is the same (D_e = 0, so D_o = 0 too) the members never disagreed: alpha is 1.
Fewer than two pairable values: None. The sums of squared differences use
Σ_{i≠j} (v_i − v_j)² = 2 · (m · Σv² − (Σv)²).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from axis_eval.report.models import PairEntry, RunEntry
from axis_eval.report.panel_models import FlaggedCheck, MemberPairAlpha, PanelAgreement
from axis_eval.scoring.panel_models import PanelGrades

Unit = Sequence[float | None]
"""One unit's values, one per coder (None: missing)."""

POINTS = 10
"""A 0–10 check grade is this many points (the margin and the alpha values are in points)."""


def _pair_sum(values: Sequence[float]) -> float:
    """Σ over ordered pairs i ≠ j of (v_i − v_j)²."""
    m = len(values)
    total = sum(values)
    return 2 * (m * sum(v * v for v in values) - total * total)


def krippendorff_alpha(units: Sequence[Unit]) -> float | None:
    """Krippendorff's alpha with the interval metric over ``units`` (rows: units, columns:
    coders, None: missing). None with fewer than two pairable values."""
    pairable = [vs for u in units if len(vs := [float(v) for v in u if v is not None]) >= 2]
    n = sum(len(vs) for vs in pairable)
    if n < 2:
        return None
    d_o = sum(_pair_sum(vs) / (len(vs) - 1) for vs in pairable) / n
    d_e = _pair_sum([v for vs in pairable for v in vs]) / (n * (n - 1))
    if d_e <= 1e-12:
        return 1.0
    return 1 - d_o / d_e


def _rounded(alpha: float | None) -> float | None:
    return None if alpha is None else round(alpha, 4)


def _panels(runs: Sequence[RunEntry]) -> list[tuple[int, PanelGrades]]:
    return [
        (r.run_index, r.score.panel)
        for r in runs
        if r.status == "completed" and r.score is not None and r.score.panel is not None
    ]


def _table(
    panels: Sequence[tuple[int, PanelGrades]], members: Sequence[str]
) -> list[tuple[int, str, list[float | None]]]:
    """(run index, check, the values in ``members`` order) per unit."""
    rows = []
    for run_index, grades in panels:
        where = {m: i for i, m in enumerate(grades.members)}
        for check in grades.checks:
            values: list[float | None] = []
            for member in members:
                i = where.get(member)
                grade = check.grades[i] if i is not None and i < len(check.grades) else None
                values.append(None if grade is None else float(grade * POINTS))
            rows.append((run_index, check.check, values))
    return rows


def agreement(
    panels: Sequence[tuple[int, PanelGrades]], margin: float | None = None
) -> PanelAgreement | None:
    """The agreement over these runs' panel grades (None: no run has any)."""
    if not panels:
        return None
    members = list(dict.fromkeys(m for _, g in panels for m in g.members))
    margin = panels[0][1].margin if margin is None else margin
    rows = _table(panels, members)
    units = [values for _, _, values in rows]
    pairs = []
    for a, b in combinations(range(len(members)), 2):
        two = [[u[a], u[b]] for u in units]
        pairs.append(
            MemberPairAlpha(
                members=[members[a], members[b]],
                alpha=_rounded(krippendorff_alpha(two)),
                units=sum(x is not None and y is not None for x, y in two),
            )
        )
    flagged = []
    for run_index, check, values in rows:
        given = [v for v in values if v is not None]
        if len(given) >= 2 and max(given) - min(given) > margin:
            flagged.append(
                FlaggedCheck(
                    run_index=run_index,
                    check=check,
                    grades={
                        m: round(v / POINTS)
                        for m, v in zip(members, values, strict=True)
                        if v is not None
                    },
                    spread=max(given) - min(given),
                )
            )
    return PanelAgreement(
        members=members,
        units=sum(sum(v is not None for v in u) >= 2 for u in units),
        alpha=_rounded(krippendorff_alpha(units)),
        pairs=pairs,
        margin=margin,
        flagged=flagged,
    )


def pair_agreement(runs: Sequence[RunEntry]) -> PanelAgreement | None:
    """A pair's agreement over its completed runs' panel grades."""
    return agreement(_panels(runs))


def suite_agreement(pairs: Sequence[PairEntry]) -> PanelAgreement | None:
    """The agreement over every pair's runs (units from all of them), its flagged checks
    naming their pair."""
    panels = [p for pair in pairs for p in _panels(pair.runs)]
    result = agreement(panels)
    if result is None:
        return None
    result.flagged = [
        f.model_copy(update={"scenario_key": pair.scenario_key, "agent_name": pair.agent_name})
        for pair in pairs
        if pair.panel is not None
        for f in pair.panel.flagged
    ]
    return result
