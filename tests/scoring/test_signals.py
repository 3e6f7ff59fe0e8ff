"""Speed tiers, severity weighting, context-size weighting, defaults, category raw."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from axis_eval.scoring.models import SignalScores
from axis_eval.scoring.signals import (
    SIGNAL_WEIGHTS,
    aggregate_signals,
    category_raw,
    context_weighted_mean,
    default_audit,
    interaction_speed,
    severity_weight,
    severity_weighted_mean,
    speed_category,
    speed_score,
)
from axis_eval.transcript.sparse_index import Interaction


@pytest.mark.parametrize(
    ("category", "duration_ms", "expected"),
    [
        # environment: ≤ 500 ms, ≤ 2 s, ≤ 5 s, ≤ 10 s, > 10 s
        ("environment", 1, 1.0),
        ("environment", 500, 1.0),
        ("environment", 501, 0.9),
        ("environment", 2_000, 0.9),
        ("environment", 2_001, 0.8),
        ("environment", 5_000, 0.8),
        ("environment", 5_001, 0.6),
        ("environment", 10_000, 0.6),
        ("environment", 10_001, 0.4),
        # service: ≤ 2 s, ≤ 5 s, ≤ 10 s, ≤ 25 s, > 25 s
        ("service", 2_000, 1.0),
        ("service", 2_001, 0.9),
        ("service", 5_000, 0.9),
        ("service", 10_000, 0.8),
        ("service", 10_001, 0.6),
        ("service", 25_000, 0.6),
        ("service", 25_001, 0.4),
        # agent: ≤ 2 s, ≤ 5 s, ≤ 15 s, ≤ 30 s, > 30 s
        ("agent", 2_000, 1.0),
        ("agent", 5_001, 0.8),
        ("agent", 15_000, 0.8),
        ("agent", 15_001, 0.6),
        ("agent", 30_000, 0.6),
        ("agent", 30_001, 0.4),
        # unknown or zero duration: excellent
        ("environment", None, 1.0),
        ("environment", 0, 1.0),
    ],
)
def test_speed_tiers_at_boundaries(category: str, duration_ms: int | None, expected: float) -> None:
    assert speed_score(category, duration_ms) == expected  # type: ignore[arg-type]


def interaction(
    id: int, categories: list[str], duration_ms: int | None = None, **kw: object
) -> Interaction:
    return Interaction(
        id=id,
        categories=categories,
        tool="Bash",
        canonical_tool="bash",
        duration_ms=duration_ms,
        **kw,
    )


def test_speed_precedence_service_environment_agent() -> None:
    assert speed_category(["environment", "service"]) == "service"
    assert speed_category(["agent", "environment"]) == "environment"
    assert speed_category(["agent"]) == "agent"
    # a networked shell call of 3 s: the service table says ≤ 5 s → 0.9 (env would say 0.8)
    assert interaction_speed(interaction(1, ["environment", "service"], 3_000)) == 0.9
    assert interaction_speed(interaction(1, ["environment"], 3_000)) == 0.8


def test_severity_weighting_by_hand() -> None:
    # w(v) = (1 − v)² + 1: w(1.0) = 1, w(0.4) = 1.36, w(0.9) = 1.01
    assert severity_weight(1.0) == 1.0
    assert severity_weight(0.4) == pytest.approx(1.36)
    # [1.0, 0.4]: (1·1 + 1.36·0.4) / (1 + 1.36) = 1.544 / 2.36 = 0.654237 (plain mean 0.7)
    assert severity_weighted_mean([1.0, 0.4]) == pytest.approx(0.654237, abs=1e-6)
    # [1, 1, 1, 0.4]: (3 + 0.544) / (3 + 1.36) = 3.544 / 4.36 = 0.812844 (plain mean 0.85)
    assert severity_weighted_mean([1.0, 1.0, 1.0, 0.4]) == pytest.approx(0.812844, abs=1e-6)
    # [1.0, 0.9]: (1 + 1.01·0.9) / 2.01 = 1.909 / 2.01 = 0.949751
    assert severity_weighted_mean([1.0, 0.9]) == pytest.approx(0.949751, abs=1e-6)
    assert severity_weighted_mean([]) == 1.0


def test_context_size_weighting_by_hand() -> None:
    # a failed call with a 900-byte error outweighs a 100-byte success: (1·100 + 0·900)/1000
    assert context_weighted_mean([(1.0, 100), (0.0, 900)]) == pytest.approx(0.1)
    # sizes below 1 count as 1: (1·1 + 0·1) / 2
    assert context_weighted_mean([(1.0, 0), (0.0, 0)]) == 0.5
    # (0.3·100 + 1.0·100) / 200 = 0.65
    assert context_weighted_mean([(0.3, 100), (1.0, 100)]) == pytest.approx(0.65)
    assert context_weighted_mean([]) == 1.0


def test_defaults() -> None:
    assert default_audit(interaction(4, ["environment"])).success == 1.0
    errored = default_audit(interaction(5, ["environment"], is_error=True))
    assert (errored.success, errored.weight, errored.relevance) == (0.3, 1.0, 1.0)
    assert errored.rationale == "default"
    # nothing evaluated: every signal 1.0, whatever necessity was judged
    assert aggregate_signals([], necessity=0.2) == SignalScores()


def test_signal_weights_table() -> None:
    assert SIGNAL_WEIGHTS["environment"] == {
        "success": 0.35,
        "speed": 0.15,
        "weight": 0.15,
        "relevance": 0.15,
        "necessity": 0.20,
    }
    assert SIGNAL_WEIGHTS["service"]["success"] == 0.25
    assert SIGNAL_WEIGHTS["agent"]["necessity"] == 0.25
    for weights in SIGNAL_WEIGHTS.values():
        assert sum(weights.values()) == pytest.approx(1.0)
        assert weights["speed"] == 0.15  # "weighted equally across all categories"


def test_category_raw_by_hand() -> None:
    # environment: 0.35·0.5 + 0.15·1 + 0.15·1 + 0.15·1 + 0.20·1 = 0.175 + 0.65 = 0.825
    assert category_raw("environment", SignalScores(success=0.5)) == pytest.approx(0.825)
    # service: 0.25·0.3 + 0.15·0.9 + 0.2 + 0.2 + 0.2 = 0.075 + 0.135 + 0.6 = 0.81
    assert category_raw("service", SignalScores(success=0.3, speed=0.9)) == pytest.approx(0.81)
    # agent: 0.15 + 0.15 + 0.20·0.5 + 0.25 + 0.25·0.6 = 0.8
    assert category_raw("agent", SignalScores(weight=0.5, necessity=0.6)) == pytest.approx(0.8)
    assert category_raw("agent", SignalScores()) == 1.0
    zero = SignalScores(success=0, speed=0, weight=0, relevance=0, necessity=0)
    assert category_raw("service", zero) == 0.0


speeds = st.lists(st.sampled_from([1.0, 0.9, 0.8, 0.6, 0.4]), min_size=1, max_size=40)


@given(speeds)
def test_severity_weighted_speed_never_above_the_plain_mean(values: list[float]) -> None:
    plain = sum(values) / len(values)
    weighted = severity_weighted_mean(values)
    assert weighted <= plain + 1e-12
    assert min(values) - 1e-12 <= weighted <= max(values) + 1e-12


@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=20))
def test_severity_weighting_holds_for_any_unit_values(values: list[float]) -> None:
    assert severity_weighted_mean(values) <= sum(values) / len(values) + 1e-12


@given(
    st.lists(
        st.tuples(st.floats(min_value=0, max_value=1), st.integers(min_value=-5, max_value=10**7)),
        min_size=1,
        max_size=20,
    )
)
def test_context_weighted_mean_is_a_mean(pairs: list[tuple[float, int]]) -> None:
    values = [v for v, _ in pairs]
    assert min(values) - 1e-12 <= context_weighted_mean(pairs) <= max(values) + 1e-12


@given(st.sampled_from(["environment", "service", "agent"]), st.integers(0, 10**8))
def test_speed_is_a_tier(category: str, duration_ms: int) -> None:
    assert speed_score(category, duration_ms) in {1.0, 0.9, 0.8, 0.6, 0.4}  # type: ignore[arg-type]
