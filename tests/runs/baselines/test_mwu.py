"""The Mann–Whitney U p-value against small cases computed by hand."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from axis_eval.runs.baselines import mann_whitney_u


def test_fully_separated_four_and_four_is_two_of_seventy() -> None:
    # Only {1,2,3,4} and {5,6,7,8} are as extreme: 2 of C(8,4) = 70 splits.
    assert mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8]) == (pytest.approx(2 / 70), "exact")
    assert mann_whitney_u([5, 6, 7, 8], [1, 2, 3, 4])[0] == pytest.approx(2 / 70)


def test_one_swap_is_four_of_seventy() -> None:
    # Rank sum 11 (E = 18): sums 10, 11, 25, 26 are as extreme, one split each.
    assert mann_whitney_u([1, 2, 3, 5], [4, 6, 7, 8])[0] == pytest.approx(4 / 70)


def test_identical_samples_give_one() -> None:
    assert mann_whitney_u([1, 2, 3, 4], [1, 2, 3, 4])[0] == pytest.approx(1.0)
    assert mann_whitney_u([7, 7, 7, 7], [7, 7, 7, 7])[0] == pytest.approx(1.0)


def test_ties_use_midranks_exactly() -> None:
    # Pooled midranks 1.5 1.5 4.5 4.5 4.5 4.5 7.5 7.5; a's sum 12, E = 18.
    # Sums ≤ 12 or ≥ 24: (two 1.5s, two 4.5s) and (two 4.5s, two 7.5s), C(4,2)=6 each.
    assert mann_whitney_u([1, 1, 2, 2], [2, 2, 3, 3])[0] == pytest.approx(12 / 70)


def test_normal_approximation_above_twenty_runs() -> None:
    # Twenty runs in all are still exact: 2 of C(20, 10) splits are as extreme.
    assert mann_whitney_u(list(range(10)), list(range(10, 20))) == (
        pytest.approx(2 / math.comb(20, 10)),
        "exact",
    )
    a = list(range(11))
    b = list(range(11, 22))
    p, method = mann_whitney_u(a, b)
    # U = 0, mean 60.5, variance 11·11·23/12, continuity correction 0.5.
    z = (60.5 - 0.5) / math.sqrt(11 * 11 * 23 / 12)
    assert method == "normal"
    assert p == pytest.approx(2 * (1 - NormalDist().cdf(z)), rel=1e-6)


def test_normal_approximation_corrects_for_ties() -> None:
    a = [1] * 6 + [2] * 5
    b = [2] * 5 + [3] * 6
    # n = 22; ties: 6 ones, 10 twos, 6 threes. Ranks: ones 3.5, twos 11.5, threes 19.5.
    u = 6 * 3.5 + 5 * 11.5 - 11 * 12 / 2
    var = 11 * 11 / 12 * (23 - (2 * (6**3 - 6) + (10**3 - 10)) / (22 * 21))
    z = (abs(u - 60.5) - 0.5) / math.sqrt(var)
    p, method = mann_whitney_u(a, b)
    assert method == "normal"
    assert p == pytest.approx(2 * (1 - NormalDist().cdf(z)), rel=1e-6)


def test_empty_sample_is_an_error() -> None:
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])
