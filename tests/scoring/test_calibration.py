"""Half-up rounding, Φ and the S-curve: hand-computed reference points and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from axis_eval._types import round_half_up
from axis_eval.scoring.calibration import DEFAULT_CALIBRATION, calibrate, calibrate_category, phi
from axis_eval.scoring.models import CalibrationConfig, CurveParams


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, 1),  # ties go up: Python's round(0.5) would give 0
        (1.5, 2),
        (2.5, 3),  # round(2.5) would give 2
        (84.5, 85),
        (84.49, 84),
        (84.51, 85),
        (0.0, 0),
        (99.999, 100),
        (-0.5, 0),  # JS Math.round(-0.5) is -0: ties toward +inf
        (-2.5, -2),
        (-2.6, -3),
        (-2.4, -2),
        (84.49999999999999, 85),  # float noise for an exact 84.5 counts as the tie
    ],
)
def test_round_half_up(value: float, expected: int) -> None:
    assert round_half_up(value) == expected


def test_round_half_up_rejects_nan() -> None:
    with pytest.raises(ValueError):
        round_half_up(math.nan)


def test_phi_reference_values() -> None:
    assert phi(0.0) == 0.5
    assert phi(1.0) == pytest.approx(0.841345, abs=1e-6)
    assert phi(-2.0) == pytest.approx(0.022750, abs=1e-6)
    assert phi(1.0) + phi(-1.0) == pytest.approx(1.0)


ENV = CurveParams(median=0.75, sigma=0.5)
SVC = CurveParams(median=0.65, sigma=0.5)
AGENT = CurveParams(median=0.70, sigma=0.5)


@pytest.mark.parametrize(
    ("raw", "curve", "expected"),
    [
        # r = m → z = 0 → Φ = 0.5 → 50, for every category
        (0.75, ENV, 50),
        (0.65, SVC, 50),
        (0.70, AGENT, 50),
        # env r = 0.9: z = ln(0.9/0.75)/0.5 = ln 1.2/0.5 = 0.18232/0.5 = 0.36464;
        # Φ(0.36464) = 0.64231 → 64.231 → 64
        (0.9, ENV, 64),
        # agent r = 0.9: z = ln(0.9/0.7)/0.5 = 0.25131/0.5 = 0.50263; Φ = 0.69239 → 69
        (0.9, AGENT, 69),
        # svc r = 0.92: z = ln(0.92/0.65)/0.5 = 0.34740/0.5 = 0.69480; Φ = 0.75641 → 76
        (0.92, SVC, 76),
        # env r = 0.75·e^-0.5 = 0.45490: z = -1; Φ(-1) = 0.15866 → 15.87 → 16
        (0.75 * math.exp(-0.5), ENV, 16),
        # env r = 0.75·e^-1 = 0.27591: z = -2; Φ(-2) = 0.02275 → 2.275 → 2
        (0.75 * math.exp(-1.0), ENV, 2),
        # env r = 0.5: z = ln(0.5/0.75)/0.5 = -0.40547/0.5 = -0.81093; Φ = 0.20870 → 21
        (0.5, ENV, 21),
        # env r = 0.999: z = ln(1.332)/0.5 = 0.28668/0.5 = 0.57336; Φ = 0.71680 → 72.
        # Only r ≥ 1 reaches 100: the curve is cut there.
        (0.999, ENV, 72),
        (1.0, ENV, 100),
        (1.5, ENV, 100),
        (0.0, ENV, 0),
        (-0.2, ENV, 0),
        # a weighted sum of 1.0s that comes out as 0.9999999999999999 is 1
        (0.9999999999999999, ENV, 100),
    ],
)
def test_calibration_reference_points(raw: float, curve: CurveParams, expected: int) -> None:
    assert calibrate(raw, curve) == expected


def test_category_defaults_and_override() -> None:
    assert DEFAULT_CALIBRATION.environment.median == 0.75
    assert DEFAULT_CALIBRATION.service.median == 0.65
    assert DEFAULT_CALIBRATION.agent.median == 0.70
    assert {c.sigma for c in (ENV, SVC, AGENT)} == {0.5}
    assert calibrate_category(0.65, "service") == 50
    assert calibrate_category(0.65, "environment") < 50
    # a steeper custom curve: sigma 0.25, median 0.9; r = 0.9 is its median
    custom = CalibrationConfig(environment=CurveParams(median=0.9, sigma=0.25))
    assert calibrate_category(0.9, "environment", custom) == 50
    assert calibrate_category(0.65, "service", custom) == 50  # others keep the defaults


units = st.floats(min_value=-0.5, max_value=1.5, allow_nan=False)
curves = st.builds(
    CurveParams,
    median=st.floats(min_value=0.01, max_value=0.99),
    sigma=st.floats(min_value=0.05, max_value=3.0),
)


@given(units, curves)
def test_calibration_is_within_bounds(raw: float, curve: CurveParams) -> None:
    assert 0 <= calibrate(raw, curve) <= 100


@given(units, units, curves)
def test_calibration_is_monotonic(a: float, b: float, curve: CurveParams) -> None:
    low, high = sorted((a, b))
    assert calibrate(low, curve) <= calibrate(high, curve)


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_round_half_up_is_nearest(value: float) -> None:
    result = round_half_up(value)
    assert abs(result - value) <= 0.5 + 1e-9
