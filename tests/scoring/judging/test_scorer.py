"""The scoring seam end to end: checks, judges over HTTP, redaction, chunking, the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axis_eval import load_config
from axis_eval.config.models import Judging, LoadedConfig
from axis_eval.errors import PreflightError
from axis_eval.planning.models import AgentSpec
from axis_eval.redact import Redactor
from axis_eval.scoring.scorer import JudgeScorer, preflight_judging

from .helpers import (
    FAST,
    audit_json,
    goal_json,
    judge_tape,
    make_scorer,
    outcome,
    scenario,
    simple_transcript,
    tool_entry,
    transcript,
)

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c"


def workspace(tmp_path: Path) -> Path:
    """A job-like folder: ``<root>/work`` with hello.txt, ``home`` and ``tmp`` beside it."""
    root = tmp_path / "job"
    for sub in ("work", "home", "tmp"):
        (root / sub).mkdir(parents=True)
    (root / "work" / "hello.txt").write_text("Hello")
    return root / "work"


async def test_deterministic_checks_pass_and_fail_without_any_judge(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    checks = [
        ("hello.txt exists", 0.5, "test -f hello.txt && echo found it"),
        ("it says Bye", 0.5, "grep Bye hello.txt"),
    ]
    # No API judge at all: a run with only deterministic checks and no tool calls needs none.
    scorer = JudgeScorer(judging=None, config_dir=tmp_path, parent_env={"PATH": "/usr/bin:/bin"})
    result = await scorer.score(outcome(scenario(checks), transcript()), ws)
    assert result is not None and not result.withheld
    passed, failed = result.checks
    assert (passed.kind, passed.score, passed.exit_code) == ("deterministic", 10, 0)
    assert passed.output == "found it" and passed.command == checks[0][2]
    assert (failed.score, failed.exit_code, failed.rationale) == (0, 1, "exit code 1")
    assert result.goal_achievement == 50  # (0.5·10 + 0.5·0)·10
    assert result.judge.kind == "none" and result.judge.calls == 0 and result.chunks == 0


async def test_checks_that_ran_where_the_job_ran_score_it_here_without_its_workspace(
    tmp_path: Path,
) -> None:
    """A Dask worker runs the checks before its workspace goes, and hands the verdicts back
    (``take_checks``) in the outcome: ``axis run`` scores with them and no workspace."""
    ws = workspace(tmp_path)
    checks = [("hello.txt exists", 0.5, "test -f hello.txt"), ("it says Bye", 0.5, "grep Bye x")]
    env = {"PATH": "/usr/bin:/bin"}
    on_worker = JudgeScorer(judging=None, config_dir=tmp_path, parent_env=env)
    ran = outcome(scenario(checks), transcript())
    await on_worker.run_checks(ran, ws)
    taken = on_worker.take_checks(ran.spec)
    assert taken is not None and sorted(v.score for v in taken.values()) == [0, 10]
    assert on_worker.take_checks(ran.spec) is None  # handed over once
    (ws / "hello.txt").unlink()  # the workspace is gone: nothing may run again here
    here = JudgeScorer(judging=None, config_dir=tmp_path, parent_env=env)
    back = outcome(scenario(checks), transcript())
    back.checks = taken
    result = await here.score(back, None)
    assert result is not None and not result.withheld
    assert [c.score for c in result.checks] == [10, 0] and result.goal_achievement == 50
    # Without them and without a workspace, nothing runs: the goal has no evidence.
    none = await JudgeScorer(judging=None, config_dir=tmp_path, parent_env=env).score(
        outcome(scenario(checks), transcript()), None
    )
    assert none is not None and [c.score for c in none.checks] == []


async def test_a_check_over_its_time_limit_scores_zero(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    judging = Judging(timeout_seconds=0.3)
    scorer = JudgeScorer(judging=judging, config_dir=tmp_path, parent_env={"PATH": "/usr/bin:/bin"})
    result = await scorer.score(outcome(scenario([("slow", 1.0, "sleep 5")]), transcript()), ws)
    assert result is not None
    assert result.checks[0].score == 0 and "timed out" in result.checks[0].rationale


async def test_checks_run_before_artifacts_are_kept_for_scoring(serve_tape, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    server = serve_tape(judge_tape(goal_json(10), audit_json([1, 2])))
    scorer = make_scorer(server.url, tmp_path, parent_env={"PATH": "/usr/bin:/bin"})
    checks = [("exists", 0.5, "test -f hello.txt"), ("judged", 0.5, None)]
    job = outcome(scenario(checks), simple_transcript())
    early = await scorer.run_checks(job, ws)
    assert [c.score for c in early] == [10]
    (ws / "hello.txt").unlink()  # what a later step (or the judge) might do
    result = await scorer.score(job, ws)
    assert result is not None and [c.score for c in result.checks] == [10, 10]
    assert [c.kind for c in result.checks] == ["deterministic", "judge"]
    goal = next(r for r in server.requests if r.conversation == "goal")
    assert goal.usage.input_tokens > 0


async def test_a_failed_run_is_not_scored(serve_tape, tmp_path: Path) -> None:
    server = serve_tape(judge_tape(goal_json(10), audit_json([1, 2])))
    scorer = make_scorer(server.url, tmp_path)
    job = outcome(scenario("it works"), simple_transcript(), status="failed")
    assert await scorer.run_checks(job, tmp_path) == []
    assert await scorer.score(job, tmp_path) is None
    assert server.requests == []


async def test_a_secret_never_reaches_the_judge(serve_tape, stub, tmp_path: Path) -> None:
    leaky = transcript(
        tool_entry(1, "Bash", {"command": f"curl -H 'Authorization: Bearer {SECRET}' x"}, "ok"),
        tool_entry(2, "Bash", {"command": "env"}, f"OPENAI_API_KEY={SECRET}\nPATH=/bin"),
        result=f"I used the key {SECRET}.",
    )
    job = outcome(scenario("it works"), leaky)
    # The scripted server: a conversation matching the secret would answer if it arrived.
    leak = {"name": "leak", "match": SECRET, "turns": [{"text": "LEAKED"}]}
    server = serve_tape(
        judge_tape(
            goal_json(10), audit_json([1, 2], necessity={"environment": 1, "service": 1}), [leak]
        )
    )
    scorer = make_scorer(server.url, tmp_path, redactor=Redactor([SECRET]), use_cache=False)
    result = await scorer.score(job, tmp_path)
    assert result is not None and not result.withheld, result and result.withheld_reason
    assert {r.conversation for r in server.requests} == {"goal", "audit"}
    assert SECRET not in json.dumps([r.model_dump(mode="json") for r in server.requests])
    # The stub sees the request bodies themselves: the mask is there, the secret is not.
    stub.goal, stub.audit = (
        goal_json(10),
        audit_json([1, 2], necessity={"environment": 1, "service": 1}),
    )
    scorer = make_scorer(stub.url, tmp_path, redactor=Redactor([SECRET]), use_cache=False)
    assert await scorer.score(job, tmp_path) is not None
    sent = json.dumps(stub.bodies)
    assert SECRET not in sent and "[REDACTED]" in sent


def big_transcript(calls: int = 30, size: int = 2000):
    return transcript(
        *(
            tool_entry(n, "Bash", {"command": f"cat part{n}.txt"}, f"{n:04d}" * (size // 4))
            for n in range(1, calls + 1)
        )
    )


async def test_a_transcript_larger_than_the_context_is_chunked(serve_tape, tmp_path: Path) -> None:
    # Each part must carry the whole sparse index (#1 … #30) before its own data.
    goal_part = {
        "name": "goal-part",
        "match": r"/#1 [^\n]*\n[\s\S]*#30 [\s\S]*<<<DATA RUN RECORD PART \d+ OF \d+/",
        "turns": [{"text": goal_json(9)}],
    }
    audit_part = {
        "name": "audit-part",
        "match": r"/#1 [^\n]*\n[\s\S]*#30 [\s\S]*<<<DATA DETAILS/",
        "turns": [
            {"text": json.dumps({"audits": [], "necessity": {"environment": {"score": 0.5}}})}
        ],
    }
    tape = {
        "version": 1,
        "conversations": [goal_part, audit_part, {"name": "other", "turns": [{"text": "no"}]}],
    }
    server = serve_tape(tape)
    scorer = make_scorer(server.url, tmp_path, context_tokens=12_000)
    result = await scorer.score(outcome(scenario("it works"), big_transcript()), tmp_path)
    assert result is not None and not result.withheld, result and result.withheld_reason
    names = [r.conversation for r in server.requests]
    assert "other" not in names
    assert names.count("goal-part") > 1 and names.count("audit-part") > 1
    assert result.chunks == max(names.count("goal-part"), names.count("audit-part"))
    assert any("judged in parts" in n for n in result.notes)
    assert result.checks[0].score == 9
    assert result.categories["environment"].signals.necessity == 0.5
    # Every part fits the context (tokens as the server counts them).
    assert max(r.usage.input_tokens for r in server.requests) <= 12_000


async def test_rescoring_unchanged_hits_the_cache(serve_tape, tmp_path: Path) -> None:
    server = serve_tape(judge_tape(goal_json(10), audit_json([1, 2])))
    job = outcome(scenario("it works"), simple_transcript())
    first = await make_scorer(server.url, tmp_path).score(job, tmp_path)
    assert first is not None and first.judge.cached_calls == 0
    before = len(server.requests)
    again = make_scorer(server.url, tmp_path)
    second = await again.score(job, tmp_path)
    assert len(server.requests) == before  # zero calls
    assert second is not None and second.axis_score == first.axis_score
    assert (second.judge.calls, second.judge.cached_calls, second.judge.input_tokens) == (2, 2, 0)
    assert list((tmp_path / ".axis" / "judge-cache").rglob("*.json"))


async def test_no_key_and_no_base_url_withholds(tmp_path: Path) -> None:
    judging = Judging(model="anthropic:judge-model")
    scorer = JudgeScorer(judging=judging, config_dir=tmp_path, parent_env={}, policy=FAST)
    result = await scorer.score(outcome(scenario("it works"), simple_transcript()), tmp_path)
    assert result is not None and result.withheld
    assert "ANTHROPIC_API_KEY" in (result.withheld_reason or "")


def _loaded(tmp_path: Path, judging: dict[str, object]) -> LoadedConfig:
    tmp_path.mkdir()
    config = {
        "agents": ["events"],
        "adapters": {
            "events": {"command": ["true"], "output": "ndjson", "required_env": ["EVENTS_KEY"]}
        },
        "judging": judging,
    }
    (tmp_path / "axis.config.json").write_text(json.dumps(config))
    (tmp_path / "scenarios").mkdir(exist_ok=True)
    return load_config(str(tmp_path / "axis.config.json"))


def test_preflight_finds_a_missing_judge_key_before_any_spend(tmp_path: Path) -> None:
    run_agent = [AgentSpec(name="claude-code", adapter="claude-code")]
    api = _loaded(tmp_path / "a", {"model": "openai:gpt-5"})
    with pytest.raises(PreflightError, match="OPENAI_API_KEY"):
        preflight_judging(api, run_agent, {}, {})
    assert preflight_judging(api, run_agent, {}, {"OPENAI_API_KEY": "k"}) == {}
    # A dry run: the API judge goes to the scripted model server and needs no key.
    assert preflight_judging(api, run_agent, {}, {}, model_server_url="http://127.0.0.1:1") == {}
    agent = _loaded(tmp_path / "b", {"agents": ["events"]})
    with pytest.raises(PreflightError, match="EVENTS_KEY"):
        preflight_judging(agent, run_agent, {}, {})
    loaded = preflight_judging(agent, run_agent, {}, {"EVENTS_KEY": "k"})
    assert list(loaded) == ["events"]
