"""The S-curve that maps a category's raw score to 0–100, rounded half up.

``score = round(100 · Φ((ln r − ln m) / s))`` with Φ the standard normal CDF, r the raw
score in [0, 1], m the category's median (the raw score that maps to 50) and s the spread.
r ≥ 1 gives 100, r ≤ 0 gives 0. Defaults (the scoring tables): environment m = 0.75,
service m = 0.65, agent m = 0.70, all s = 0.5.
"""

from __future__ import annotations

import math

from axis_eval._types import Category, round_half_up
from axis_eval.scoring.models import CalibrationConfig, CurveParams

DEFAULT_CALIBRATION = CalibrationConfig()
"""environment m 0.75, service m 0.65, agent m 0.70; s 0.5 for all."""


def phi(z: float) -> float:
    """The standard normal CDF, Φ(z) = (1 + erf(z / √2)) / 2."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def calibrate(raw: float, curve: CurveParams) -> int:
    """A raw score in [0, 1] on the 0–100 S-curve: 50 at the median, 100 only at r ≥ 1."""
    raw = round(raw, 12)  # a weighted sum of 1.0s may come out as 0.9999999999999999
    if raw >= 1.0:
        return 100
    if raw <= 0.0:
        return 0
    z = (math.log(raw) - math.log(curve.median)) / curve.sigma
    return min(100, max(0, round_half_up(100.0 * phi(z))))


def calibrate_category(
    raw: float, category: Category, calibration: CalibrationConfig | None = None
) -> int:
    """:func:`calibrate` with the category's curve (the defaults unless given)."""
    return calibrate(raw, (calibration or DEFAULT_CALIBRATION).for_category(category))
