"""The scoring formats: validation, aliases, and the verdicts a judge hands over."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from axis_eval._types import OutputModel
from axis_eval.report.models import PairEntry, RunEntry
from axis_eval.scoring.models import (
    CategoryScore,
    CheckVerdict,
    InteractionAudit,
    JudgeVerdicts,
    NecessityVerdict,
    ScoreResult,
)
from helpers.factories import run_entry, score, withheld


def test_scoring_formats_share_the_one_file_format_base() -> None:
    for model in (CategoryScore, CheckVerdict, InteractionAudit, JudgeVerdicts, ScoreResult):
        assert issubclass(model, OutputModel)
        assert model.model_config == OutputModel.model_config


def test_check_scores_round_half_up_and_stay_in_range() -> None:
    assert CheckVerdict(check="c", score=7.5).score == 8
    assert CheckVerdict(check="c", score=2.4).score == 2
    with pytest.raises(ValidationError):
        CheckVerdict(check="c", score=11)
    with pytest.raises(ValidationError):
        CheckVerdict(check="c", score=-1)
    with pytest.raises(ValidationError):
        CheckVerdict(check="c", score=5, weight=-1)


def test_audit_and_necessity_ranges() -> None:
    with pytest.raises(ValidationError):
        InteractionAudit(interaction_id=1, success=1.2)
    with pytest.raises(ValidationError):
        InteractionAudit(interaction_id=0)
    with pytest.raises(ValidationError):
        NecessityVerdict(score=-0.1)


def test_verdicts_from_camel_case_json() -> None:
    data = {
        "checks": [{"check": "site builds", "weight": 1, "score": 9, "rationale": "ok"}],
        "audits": [{"interactionId": 2, "success": 0.5, "weight": 1, "relevance": 0.8}],
        "necessity": {"agent": {"score": 0.7, "unnecessaryIds": [2], "rationale": "r"}},
        "chunks": 2,
        "notes": ["split into 2 chunks"],
    }
    v = JudgeVerdicts.model_validate(data)
    assert v.audits[0].interaction_id == 2 and v.necessity["agent"].unnecessary_ids == [2]
    assert JudgeVerdicts.model_validate_json(v.model_dump_json()) == v
    assert '"interactionId":2' in v.model_dump_json()


def test_verdicts_refuse_duplicate_audits_and_unknown_keys() -> None:
    with pytest.raises(ValidationError, match="duplicated ids"):
        JudgeVerdicts(audits=[InteractionAudit(interaction_id=1)] * 2)
    with pytest.raises(ValidationError):
        JudgeVerdicts.model_validate({"necessity": {"galaxy": {"score": 1}}})
    with pytest.raises(ValidationError):
        JudgeVerdicts.model_validate({"surprise": 1})


def test_score_result_withheld_rules() -> None:
    assert score().axis_score == 80
    with pytest.raises(ValidationError, match="all five"):
        ScoreResult(axis_score=80)
    with pytest.raises(ValidationError, match="withheldReason"):
        ScoreResult(withheld=True)
    with pytest.raises(ValidationError, match="no axisScore"):
        score(withheld=True, withheld_reason="x")
    assert withheld("judge down").axis_score is None
    with pytest.raises(ValidationError):
        score(101)


def test_score_result_in_run_and_pair_entries() -> None:
    result = score(
        categories={"agent": CategoryScore(score=61, raw=0.8, weakest_signal="weight")},
        insights=["Agent: weight 50 (#3)"],
    )
    run = run_entry(1, dir="r", score=result)
    dumped = run.model_dump(mode="json")
    assert dumped["score"]["axisScore"] == 80
    assert dumped["score"]["categories"]["agent"]["weakestSignal"] == "weight"
    again = RunEntry.model_validate(dumped)
    assert again.score == result
    # a dict from the scorer seam is validated into the typed score
    pair = PairEntry.model_validate(
        {
            "scenarioKey": "k", "baseKey": "k", "scenarioName": "K", "agentName": "a",
            "agent": "a", "status": "completed", "failed": False, "runCount": 1, "dir": "d",
            "prompt": "p", "judge": "j", "agentConfig": {}, "resolvedConfig": {},
            "score": result.model_dump(mode="json"),
        }
    )  # fmt: skip
    assert pair.score == result
    assert result.dimension("environment") == 80
