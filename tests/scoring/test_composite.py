"""Goal, composite and the whole run: score_from_verdicts by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from axis_eval.scoring.composite import (
    composite_score,
    goal_score,
    rescore,
    score_from_verdicts,
    withhold,
)
from axis_eval.scoring.insights import band, insight_line, weakest_signal
from axis_eval.scoring.models import (
    CalibrationConfig,
    CheckVerdict,
    CompositeWeights,
    CurveParams,
    InteractionAudit,
    JudgeSpend,
    JudgeVerdicts,
    NecessityVerdict,
    SignalScores,
)
from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.transcript.sparse_index import build_sparse_index


def check(score: int, weight: float = 1.0, **kw: Any) -> CheckVerdict:
    return CheckVerdict(check=f"check {score}", weight=weight, score=score, **kw)


def test_goal_weighting_by_hand() -> None:
    # (0.5·8·10 + 0.5·6·10) / 1 = 70
    assert goal_score([check(8, 0.5), check(6, 0.5)]) == 70
    # (3·10·10 + 1·0·10) / 4 = 75
    assert goal_score([check(10, 3), check(0, 1)]) == 75
    # (0.2·7 + 0.8·8)·10 / 1.0 = 78
    assert goal_score([check(7, 0.2), check(8, 0.8)]) == 78
    # weights need not sum to 1: (1·9 + 1·8)·10 / 2 = 85
    assert goal_score([check(9), check(8)]) == 85
    # 1/3·10 + … : (1·10 + 2·5)·10 / 3 = 66.67 → 67
    assert goal_score([check(10, 1), check(5, 2)]) == 67
    # a tie: (1·10 + 3·3)·10 / 4 = 190 / 4 = 47.5 → 48 (half-up)
    assert goal_score([check(10, 1), check(3, 3)]) == 48
    # all weights zero: the checks count equally, (10 + 0)·10 / 2 = 50
    assert goal_score([check(10, 0), check(0, 0)]) == 50
    assert goal_score([]) == 0


def test_composite_default_and_custom_weights() -> None:
    # 70·0.4 + 62·0.2 + 67·0.2 + 61·0.2 = 28 + 12.4 + 13.4 + 12.2 = 66.0
    assert composite_score(70, 62, 67, 61) == 66
    # 85·0.4 + 84·0.2·3 = 34 + 50.4 = 84.4 → 84
    assert composite_score(85, 84, 84, 84) == 84
    assert composite_score(100, 100, 100, 100) == 100
    assert composite_score(0, 0, 0, 0) == 0
    # custom: goal only
    assert composite_score(73, 0, 0, 0, {"goal_achievement": 1, "environment": 0,
                                         "service": 0, "agent": 0}) == 73  # fmt: skip
    # custom 0.5 / 0.5: 0.5·84 + 0.5·85 = 84.5 → 85 (half-up)
    half = CompositeWeights(goal_achievement=0.5, environment=0.5, service=0, agent=0)
    assert composite_score(84, 85, 0, 0, half) == 85
    # 0.25 each: 22.5 + 20 + 17.5 + 15.25 = 75.25 → 75; camelCase keys work too
    quarter = {"goalAchievement": 0.25, "environment": 0.25, "service": 0.25, "agent": 0.25}
    assert composite_score(90, 80, 70, 61, quarter) == 75


@pytest.mark.parametrize(
    "weights",
    [
        {"goal_achievement": 0.5, "environment": 0.2, "service": 0.2, "agent": 0.2},  # 1.1
        {"goal_achievement": 0, "environment": 0, "service": 0, "agent": 0},
        {"goal_achievement": -0.2, "environment": 0.4, "service": 0.4, "agent": 0.4},
        {"goal_achievement": 1, "environment": 0, "service": 0, "agent": 0, "extra": 0},
    ],
)
def test_bad_weights_are_refused(weights: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        CompositeWeights.of(weights)


@given(st.lists(st.floats(min_value=0, max_value=1.2), min_size=4, max_size=4))
def test_weights_validation(values: list[float]) -> None:
    data = dict(zip(("goal_achievement", "environment", "service", "agent"), values, strict=True))
    valid = abs(sum(values) - 1.0) <= 0.01 and sum(values) > 0
    try:
        weights = CompositeWeights.of(data)
    except ValidationError:
        assert not valid
    else:
        assert valid
        assert 0 <= composite_score(100, 100, 100, 100, weights) <= 100


def tool(
    offset_ms: int, name: str, tool_input: Any, *, duration_ms: int, size: int, **kw: Any
) -> Entry:
    return Entry(
        type="tool",
        timestamp="2026-05-01T10:00:00Z",
        offset_ms=offset_ms,
        tool=ToolCall(
            id=f"t{offset_ms}",
            name=name,
            input=tool_input,
            output="x",
            duration_ms=duration_ms,
            input_bytes=size // 2,
            output_bytes=size - size // 2,
            **kw,
        ),
    )


def three_calls() -> Transcript:
    return Transcript(
        agent="claude-code",
        entries=[
            tool(100, "Bash", {"command": "ls"}, duration_ms=300, size=100),
            tool(500, "Bash", {"command": "curl https://api.example.com"}, duration_ms=3_000,
                 size=100, is_error=True),
            tool(4_000, "TodoWrite", {"todos": []}, duration_ms=100, size=100),
        ],
    )  # fmt: skip


def verdicts() -> JudgeVerdicts:
    return JudgeVerdicts(
        checks=[check(8, 0.5), check(6, 0.5)],
        audits=[
            InteractionAudit(interaction_id=1, success=1, weight=1, relevance=1, rationale="ok"),
            # #2 is not audited: it keeps the defaults, success 0.3 for its error flag
            InteractionAudit(interaction_id=3, weight=0.5, rationale="bloated todo list"),
        ],
        necessity={"agent": NecessityVerdict(score=0.6, unnecessary_ids=[3, 99], rationale="r")},
        chunks=1,
        spend=JudgeSpend(judge="anthropic", model="m", kind="api", calls=2, input_tokens=900),
    )


def test_score_from_verdicts_by_hand() -> None:
    # #1 env (300 ms → 1.0), #2 env+svc (3 s timed as service → 0.9; error, unaudited),
    # #3 agent (100 ms → 1.0). Every interaction is 100 bytes.
    result = score_from_verdicts(three_calls(), None, verdicts())
    env, svc, agent = (result.categories[c] for c in ("environment", "service", "agent"))
    # Env: success (1·100 + 0.3·100)/200 = 0.65; speed [1.0, 0.9] → 1.909/2.01 = 0.949751;
    # raw = 0.35·0.65 + 0.15·0.949751 + 0.15 + 0.15 + 0.20 = 0.869963;
    # z = ln(0.869963/0.75)/0.5 = 0.296754; Φ = 0.616673 → 62
    assert env.signals.success == pytest.approx(0.65)
    assert env.signals.speed == pytest.approx(0.949751, abs=1e-6)
    assert env.raw == pytest.approx(0.869963, abs=1e-6)
    assert (env.score, env.interactions, env.audited) == (62, 2, 1)
    # Svc: #2 alone: raw = 0.25·0.3 + 0.15·0.9 + 0.6 = 0.81; z = ln(0.81/0.65)/0.5 = 0.440122;
    # Φ = 0.670076 → 67
    assert svc.raw == pytest.approx(0.81) and (svc.score, svc.audited) == (67, 0)
    # Agent: #3: raw = 0.15 + 0.15 + 0.2·0.5 + 0.25 + 0.25·0.6 = 0.8; z = 0.267063;
    # Φ = 0.605290 → 61. The unnecessary id 99 names no interaction: dropped.
    assert agent.raw == pytest.approx(0.8) and agent.score == 61
    assert agent.unnecessary_ids == [3] and agent.necessity_rationale == "r"
    # Goal (0.5·80 + 0.5·60) = 70; composite 28 + 12.4 + 13.4 + 12.2 = 66
    assert result.goal_achievement == 70
    assert (result.environment, result.service, result.agent) == (62, 67, 61)
    assert result.axis_score == 66
    # Insights: every category is below 75; weakest = first minimum
    assert env.weakest_signal == "success" and env.weakest_ids == [2]
    assert agent.weakest_signal == "weight" and agent.weakest_ids == [3]
    assert result.insights == ["Env: success 65 (#2)", "Svc: success 30 (#2)",
                               "Agent: weight 50 (#3)"]  # fmt: skip
    assert result.judge.calls == 2 and result.chunks == 1 and not result.withheld
    assert [a.interaction_id for a in result.audits] == [1, 3]


def test_rescore_with_other_weights_and_calibration() -> None:
    index = build_sparse_index(three_calls())
    first = score_from_verdicts(None, index, verdicts())
    weights = {"goal_achievement": 1, "environment": 0, "service": 0, "agent": 0}
    again = rescore(first, index, verdicts(), weights=weights)
    assert again.axis_score == 70 and again.environment == first.environment
    # a gentler environment curve (median 0.5): z = ln(0.869963/0.5)/0.5 = 1.10768 → 87
    gentle = CalibrationConfig(environment=CurveParams(median=0.5))
    assert rescore(first, index, verdicts(), calibration=gentle).environment == 87
    assert rescore(first, index, verdicts()) == first  # same verdicts, same result


def test_a_run_needing_no_llm_gets_a_complete_score() -> None:
    # only deterministic checks, no interactions: goal from the checks, categories 100
    checks = [
        CheckVerdict(check="tests pass", weight=0.5, score=10, kind="deterministic",
                     command="pytest -q", exit_code=0, output="3 passed"),
        CheckVerdict(check="lint", weight=0.5, score=0, kind="deterministic",
                     command="ruff check", exit_code=1, output="E501"),
    ]  # fmt: skip
    transcript = Transcript(agent="codex", entries=[])
    result = score_from_verdicts(transcript, None, JudgeVerdicts(checks=checks, chunks=0))
    # goal (0.5·100 + 0.5·0) = 50; composite 0.4·50 + 0.2·100·3 = 20 + 60 = 80
    assert (result.goal_achievement, result.environment, result.service, result.agent) == (
        50,
        100,
        100,
        100,
    )
    assert result.axis_score == 80 and result.judge.kind == "none" and result.chunks == 0
    assert all(c.raw == 1.0 and c.interactions == 0 for c in result.categories.values())
    assert result.insights == []


def test_nothing_evaluated_scores_100() -> None:
    result = score_from_verdicts(Transcript(agent="a"), None, JudgeVerdicts(checks=[check(10)]))
    assert result.axis_score == 100
    # no verdicts at all: defaults, and goal 0 with a note
    bare = score_from_verdicts(Transcript(agent="a"), None)
    assert (bare.goal_achievement, bare.environment, bare.axis_score) == (0, 100, 60)
    assert bare.notes == ["no goal checks: goal achievement is 0"]


def test_unaudited_interactions_keep_defaults() -> None:
    # no audits: #1 and #3 perfect; #2 success 0.3 (error flag) and still 0.9 speed
    result = score_from_verdicts(three_calls(), None, JudgeVerdicts(checks=[check(10)]))
    assert result.categories["agent"].score == 100
    assert result.categories["service"].signals.success == pytest.approx(0.3)
    assert result.categories["environment"].audited == 0


def test_audits_of_unknown_interactions_are_ignored() -> None:
    v = JudgeVerdicts(checks=[check(10)], audits=[InteractionAudit(interaction_id=7, success=0)])
    result = score_from_verdicts(three_calls(), None, v)
    assert result.audits == []
    assert result.notes == ["ignored audits of unknown interactions: 7"]


def test_withheld() -> None:
    v = JudgeVerdicts(checks=[check(10, kind="deterministic")], withheld_reason="5xx storm")
    result = score_from_verdicts(three_calls(), None, v)
    assert result.withheld and result.withheld_reason == "5xx storm"
    assert result.axis_score is None and result.goal_achievement is None
    assert result.checks == v.checks and result.categories == {}
    direct = withhold("unparseable answer", spend=JudgeSpend(calls=2))
    assert direct.withheld and direct.judge.calls == 2


def test_needs_a_transcript_or_an_index() -> None:
    with pytest.raises(ValueError):
        score_from_verdicts(None, None, JudgeVerdicts())


def test_bands_and_weakest_signal() -> None:
    assert [band(s) for s in (100, 90, 89, 75, 74, 50, 49, 0)] == [
        "Excellent",
        "Excellent",
        "Good",
        "Good",
        "Fair",
        "Fair",
        "Poor",
        "Poor",
    ]
    # first minimum in the order success, speed, weight, relevance, necessity
    assert weakest_signal(SignalScores(speed=0.5, necessity=0.5)) == "speed"
    assert weakest_signal(SignalScores(relevance=0.2, necessity=0.1)) == "necessity"
    assert weakest_signal(SignalScores()) == "success"


def test_insight_line_names_at_most_five_ids() -> None:
    result = score_from_verdicts(three_calls(), None, verdicts())
    env = result.categories["environment"].model_copy(update={"weakest_ids": list(range(1, 9))})
    assert insight_line("environment", env) == "Env: success 65 (#1, #2, #3, #4, #5 +3 more)"


audit_values = st.floats(min_value=0, max_value=1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Bash", "Read", "WebFetch", "TodoWrite", "mcp__x__y"]),
            st.integers(0, 60_000),
            st.integers(0, 10_000),
            st.booleans(),
        ),
        max_size=12,
    ),
    st.lists(st.tuples(audit_values, audit_values, audit_values), max_size=12),
    st.lists(st.integers(0, 10), max_size=4),
    audit_values,
)
def test_scores_are_within_bounds(
    calls: list[tuple[str, int, int, bool]],
    audits: list[tuple[float, float, float]],
    goals: list[int],
    necessity: float,
) -> None:
    transcript = Transcript(
        agent="a",
        entries=[
            tool(i * 10, name, {"command": "x"}, duration_ms=d, size=size, is_error=err)
            for i, (name, d, size, err) in enumerate(calls)
        ],
    )
    v = JudgeVerdicts(
        checks=[check(g) for g in goals],
        audits=[
            InteractionAudit(interaction_id=i + 1, success=s, weight=w, relevance=r)
            for i, (s, w, r) in enumerate(audits[: len(calls)])
        ],
        necessity={
            c: NecessityVerdict(score=necessity) for c in ("environment", "service", "agent")
        },
    )
    result = score_from_verdicts(transcript, None, v)
    for value in (result.axis_score, result.goal_achievement, result.environment,
                  result.service, result.agent):  # fmt: skip
        assert value is not None and 0 <= value <= 100
    for category in result.categories.values():
        assert 0.0 <= category.raw <= 1.0
        assert category.interactions >= category.audited
