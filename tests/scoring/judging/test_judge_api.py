"""The API judge over real HTTP: the scripted model server and a failing stub, via the SDKs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from axis_eval.scoring.judge import RETRY_MARKER, JudgeChoice, JudgeRequest, Message
from axis_eval.scoring.judge_api import ApiJudge
from axis_eval.scoring.retry import AdaptiveLimiter, RetryPolicy

from .helpers import (
    FAST,
    audit_json,
    goal_json,
    judge_tape,
    make_scorer,
    outcome,
    scenario,
    simple_transcript,
)

pytestmark = pytest.mark.slow  # runs judges against a scripted model server

CHECKS = [("hello.txt exists", 0.5, None), ("it says Hello", 0.5, None)]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_happy_path_scores_from_the_tape(serve_tape, tmp_path: Path, provider: str) -> None:
    server = serve_tape(judge_tape(goal_json(10, 8), audit_json([1, 2])))
    scorer = make_scorer(server.url, tmp_path, provider=provider)
    result = await scorer.score(outcome(scenario(CHECKS), simple_transcript()), tmp_path)
    assert result is not None and not result.withheld
    # goal: (0.5·10 + 0.5·8)·10 / 1 = 90
    assert result.goal_achievement == 90
    assert [c.score for c in result.checks] == [10, 8]
    assert {a.interaction_id for a in result.audits} == {1, 2}
    records = server.requests
    assert sorted(r.conversation or "" for r in records) == ["audit", "goal"]
    assert result.judge.kind == "api" and result.judge.judge == provider
    assert result.judge.calls == 2 and result.judge.cached_calls == 0
    assert result.judge.input_tokens == sum(r.usage.input_tokens for r in records)
    assert result.judge.output_tokens == sum(r.usage.output_tokens for r in records)
    assert result.chunks == 1


async def test_429_then_success_honours_retry_after(stub, tmp_path: Path) -> None:
    stub.statuses = [(429, {"retry-after": "0.3"})]
    stub.goal, stub.audit = goal_json(10, 10), audit_json([1, 2])
    scorer = make_scorer(stub.url, tmp_path, concurrency=1)
    started = time.monotonic()
    result = await scorer.score(outcome(scenario(CHECKS), simple_transcript()), tmp_path)
    assert result is not None and not result.withheld, result and result.withheld_reason
    assert time.monotonic() - started >= 0.3
    assert [s for _, _, s in stub.arrivals] == [429, 200, 200]
    assert result.judge.calls == 2  # answered calls; the 429 spent nothing


async def test_a_timeout_is_retried(stub, tmp_path: Path) -> None:
    stub.delays = [1.0]
    stub.goal = goal_json(10, 10)
    choice = JudgeChoice(kind="api", provider="anthropic", model="judge-model", base_url=stub.url)
    limiter = AdaptiveLimiter(2)
    judge = ApiJudge(choice, api_key="k", timeout_s=0.3, limiter=limiter, policy=FAST)
    reply = await judge.ask(JudgeRequest("system", (Message("user", "GOAL JUDGMENT"),)))
    assert reply.text == stub.goal and len(stub.arrivals) == 2
    assert limiter.limit == 2  # a timeout is not a rate limit


async def test_5xx_storm_ends_withheld(stub, tmp_path: Path) -> None:
    stub.default_status = (503, {})
    scorer = make_scorer(stub.url, tmp_path)
    result = await scorer.score(outcome(scenario(CHECKS), simple_transcript()), tmp_path)
    assert result is not None and result.withheld and result.axis_score is None
    assert "503" in (result.withheld_reason or "")
    assert "4 attempts" in (result.withheld_reason or "")


async def test_429_storm_lowers_the_shared_limit_which_recovers(stub, tmp_path: Path) -> None:
    stub.statuses = [(429, {"retry-after": "0"})] * 8
    stub.delay_s = 0.03
    stub.goal = goal_json(10)
    limiter = AdaptiveLimiter(8, cooldown_s=10.0)
    policy = RetryPolicy(max_attempts=5, base_delay_s=0.01, max_delay_s=0.02)
    choice = JudgeChoice(kind="api", provider="anthropic", model="judge-model", base_url=stub.url)
    judge = ApiJudge(choice, api_key="k", timeout_s=10, limiter=limiter, policy=policy)
    request = JudgeRequest("system", (Message("user", "GOAL JUDGMENT"),))
    # The storm: eight calls at once all get 429; the limit halves once (cool-down).
    await asyncio.gather(*(judge.ask(request) for _ in range(8)))
    assert limiter.lowest == 4
    after_storm = [n for _, n, s in stub.arrivals if s == 200][:8]
    assert max(after_storm) <= 4, after_storm
    # Successes raise it back to the configured maximum.
    for _ in range(6):
        await asyncio.gather(*(judge.ask(request) for _ in range(8)))
    assert limiter.limit == 8
    assert max(n for _, n, _ in stub.arrivals[-8:]) > 4


async def test_unparseable_output_is_withheld_after_one_retry_quoting_the_error(
    serve_tape, tmp_path: Path
) -> None:
    retry = {
        "name": "retry",
        "match": f"{RETRY_MARKER}: your answer could not be used because the answer holds no JSON",
        "turns": [{"text": "Still no JSON, sorry."}],
    }
    server = serve_tape(judge_tape("I think it went well!", audit_json([1, 2]), [retry]))
    scorer = make_scorer(server.url, tmp_path)
    result = await scorer.score(outcome(scenario(CHECKS), simple_transcript()), tmp_path)
    assert result is not None and result.withheld and result.axis_score is None
    assert "unusable twice" in (result.withheld_reason or "")
    goal_calls = [r.conversation for r in server.requests if r.conversation != "audit"]
    assert goal_calls == ["goal", "retry"]  # exactly one retry, and it quoted the error


async def test_invalid_then_valid_answer_is_used(serve_tape, tmp_path: Path) -> None:
    retry = {
        "name": "retry",
        "match": f"/{RETRY_MARKER}: .*checks \\[2\\] have no grade/",
        "turns": [{"text": goal_json(10, 6)}],
    }
    server = serve_tape(judge_tape(goal_json(10), audit_json([1, 2]), [retry]))
    scorer = make_scorer(server.url, tmp_path)
    result = await scorer.score(outcome(scenario(CHECKS), simple_transcript()), tmp_path)
    assert result is not None and not result.withheld
    assert [c.score for c in result.checks] == [10, 6]
    assert result.judge.calls == 3
