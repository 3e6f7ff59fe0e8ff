"""Krippendorff's alpha (interval metric) against values worked out by hand, and a panel's
median verdicts (issue 19, panels of judges)."""

from __future__ import annotations

import pytest

from axis_eval.config.models import Judging
from axis_eval.errors import ConfigError
from axis_eval.planning.models import AgentSpec
from axis_eval.runs.agreement import agreement, krippendorff_alpha
from axis_eval.scoring.judge import JudgeChoice
from axis_eval.scoring.models import CheckVerdict, InteractionAudit, JudgeVerdicts
from axis_eval.scoring.panel import combine, panel_choices
from axis_eval.scoring.panel_models import PanelCheck, PanelGrades


def test_alpha_with_missing_values_equals_the_hand_computed_one() -> None:
    # Units (rows) × coders; the last unit has one value and is not pairable.
    units = [[1, 2, None], [3, 3, 3], [None, 4, 2], [5, None, None]]
    # By hand, ordered pairs i ≠ j: unit 1 gives 2·1² = 2 over m − 1 = 1; unit 2 gives 0;
    # unit 3 gives 2·2² = 8 over 1: D_o = (2 + 0 + 8) / n, n = 7 pairable values.
    # All seven values 1, 2, 3, 3, 3, 4, 2: Σ_{i≠j} (vi − vj)² = 80, so D_e = 80 / (7·6).
    # alpha = 1 − (10/7) / (80/42) = 1 − 420/560 = 0.25.
    assert krippendorff_alpha(units) == pytest.approx(0.25)


def test_alpha_of_krippendorffs_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers,
    # 12 units, missing values; the interval alpha printed there is 0.849.
    a = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    c = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = [list(u) for u in zip(a, b, c, d, strict=True)]
    alpha = krippendorff_alpha(units)
    assert alpha is not None and round(alpha, 3) == 0.849


def test_perfect_agreement_is_one_and_too_little_data_is_none() -> None:
    assert krippendorff_alpha([[100, 100], [50, 50, 50], [0, None, 0]]) == 1.0
    assert krippendorff_alpha([[70, 70], [70, 70]]) == 1.0  # no variation at all
    assert krippendorff_alpha([[70, None], [None, 30]]) is None  # nothing pairable
    # Systematic disagreement goes below zero: the coders swap 0 and 100.
    alpha = krippendorff_alpha([[0, 100], [100, 0]])
    assert alpha is not None and alpha < 0


def test_agreement_flags_checks_past_the_margin_and_keeps_missing_members_out() -> None:
    grades = PanelGrades(
        members=["a", "b", "c"],
        checks=[
            PanelCheck(check="one", grades=[8, 7, 6]),  # 20 points apart: not flagged
            PanelCheck(check="two", grades=[0, None, 10]),  # b failed; 100 apart
        ],
        margin=25,
    )
    result = agreement([(1, grades)])
    assert result is not None
    assert [(f.check, f.grades, f.spread) for f in result.flagged] == [
        ("two", {"a": 0, "c": 10}, 100)
    ]
    assert result.units == 2
    # Units [80, 70, 60] and [0, 100]: D_o = (1200/2 + 20000/1) / 5; the five values'
    # Σ_{i≠j} = 2·(5·24900 − 310²) = 56800, D_e = 56800 / 20: 1 − 4120/2840 < 0 (the
    # members disagree most where the grades spread most).
    assert result.alpha == round(1 - (20600 / 5) / (56800 / 20), 4) == -0.4507
    ab = next(p for p in result.pairs if p.members == ["a", "b"])
    assert ab.units == 1  # b has no grade of "two"
    # A wider margin flags nothing.
    wide = agreement([(1, grades)], margin=100)
    assert wide is not None and wide.flagged == []


def _verdicts(*scores: int, success: float = 1.0) -> JudgeVerdicts:
    return JudgeVerdicts(
        checks=[CheckVerdict(check=f"c{i}", score=s) for i, s in enumerate(scores, 1)]
        + [CheckVerdict(check="runs", score=10, kind="deterministic")],
        audits=[InteractionAudit(interaction_id=1, success=success)],
    )


def _api(model: str) -> JudgeChoice:
    return JudgeChoice(kind="api", provider="anthropic", model=model)


def test_panel_medians_and_a_failed_member() -> None:
    choices = [_api("a"), _api("b"), _api("c"), _api("d")]
    members = [
        _verdicts(10, 0, success=1.0),
        _verdicts(5, 5, success=0.5),
        _verdicts(10, 0, success=0.0),
        JudgeVerdicts(withheld_reason="HTTP 500"),
    ]
    out = combine(choices, members, 25)
    # Median of the three that answered: c1 10, 10, 5 → 10; c2 0, 5, 0 → 0; success 0.5.
    assert [c.score for c in out.checks] == [10, 0, 10]
    assert out.checks[2].kind == "deterministic"
    assert out.audits[0].success == 0.5
    assert out.panel is not None
    assert [c.grades for c in out.panel.checks] == [[10, 5, 10, None], [0, 5, 0, None]]
    assert any("anthropic:d failed" in n for n in out.notes)
    # An even count: the mean of the middle two, rounded half-up (5 and 10 → 7.5 → 8).
    two = combine(choices[:2], members[:2], 25)
    assert [c.score for c in two.checks][:2] == [8, 3]
    failed = combine(choices[3:], members[3:], 25)
    assert (
        failed.withheld_reason is not None and "every panel member failed" in failed.withheld_reason
    )


def test_panel_members_are_resolved_and_checked() -> None:
    agent = AgentSpec(name="codex", adapter="codex")
    judging = Judging.model_validate(
        {
            "base_url": "http://127.0.0.1:1",
            "panel": ["anthropic:a", {"model": "openai:b", "base_url": "http://127.0.0.1:2/v1"}],
            "panelMargin": 30,
        }
    )
    assert judging.panel_margin == 30
    a, b = panel_choices(judging, agent)
    assert (a.label, a.base_url, a.api_key_env) == (
        "anthropic:a",
        "http://127.0.0.1:1",
        "ANTHROPIC_API_KEY",
    )
    assert (b.label, b.base_url, b.api_key_env) == (
        "openai:b",
        "http://127.0.0.1:2/v1",
        "OPENAI_API_KEY",
    )
    twice = Judging.model_validate({"panel": ["anthropic:a", "anthropic:a"]})
    with pytest.raises(ConfigError, match=r"judging.panel\[1\]: the same judge"):
        panel_choices(twice, agent)
    bad = Judging.model_validate({"panel": ["anthropic:a", "nope:x"]})
    with pytest.raises(ConfigError, match=r"judging.panel\[1\]: expected"):
        panel_choices(bad, agent)
