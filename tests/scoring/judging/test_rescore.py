"""A real run scored by the API judge (scripted server over HTTP), then re-scored from disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from axis_eval import load_config
from axis_eval.pipeline import RunOptions, run_async
from axis_eval.report.models import RunResult
from axis_eval.runs.rescored import save_rescore
from axis_eval.scoring.models import ScoreResult
from axis_eval.scoring.rescore import REUSED_CHECKS, rescore_report, verdicts_from_score
from axis_eval.scoring.scorer import JudgeScorer

from .helpers import FAST, audit_json, goal_json, judge_tape

AGENT = Path(__file__).with_name("events_agent.py")


def project(root: Path, judge_url: str) -> Path:
    config = {
        "agents": ["events"],
        "adapters": {
            "events": {"command": [sys.executable, str(AGENT)], "args": [], "output": "ndjson"}
        },
        "judging": {"model": "anthropic:judge-model", "base_url": judge_url},
    }
    scenario = {
        "name": "Hello",
        "prompt": "Create hello.txt saying Hello",
        "judge": [
            {"check": "hello.txt exists", "run": "test -f hello.txt", "weight": 0.5},
            {"check": "the answer says what the file holds", "weight": 0.5},
        ],
    }
    root.mkdir()
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    (root / "scenarios" / "hello.json").write_text(json.dumps(scenario))
    return root


async def test_run_then_rescore_with_new_weights_costs_nothing(serve_tape, tmp_path: Path) -> None:
    server = serve_tape(judge_tape(goal_json(8), audit_json([1, 2])))
    loaded = load_config(str(project(tmp_path / "p", server.url) / "axis.config.json"))
    env = {"PATH": "/usr/bin:/bin"}
    scorer = JudgeScorer.for_config(loaded, {}, env, policy=FAST)
    done = await run_async(
        RunOptions(loaded=loaded, scorer=scorer, environ=env, handle_signals=False)
    )
    run = done.manifest.results[0].runs[0]
    first = ScoreResult.model_validate(run.score)
    assert not first.withheld, first.withheld_reason
    assert [(c.kind, c.score) for c in first.checks] == [("deterministic", 10), ("judge", 8)]
    assert first.goal_achievement == 90  # (0.5·10 + 0.5·8)·10
    calls = len(server.requests)
    assert calls == 2
    assert (done.report_dir / run.dir / "verdicts.json").is_file()

    # Unchanged: the API judge's answers come from the cache, zero calls.
    same = await rescore_report(done.report_dir, loaded, environ=env, policy=FAST)
    assert len(server.requests) == calls
    assert (same.calls, same.cached_calls, same.input_tokens) == (2, 2, 0)
    again = same.runs[0].score
    assert again is not None and again.axis_score == first.axis_score
    assert REUSED_CHECKS in same.notes and REUSED_CHECKS in again.notes

    # New weights: a different composite, still no call.
    weights = {"goal_achievement": 1.0, "environment": 0, "service": 0, "agent": 0}
    heavy = await rescore_report(done.report_dir, loaded, environ=env, weights=weights)
    assert len(server.requests) == calls
    assert heavy.runs[0].score is not None and heavy.runs[0].score.axis_score == 90


async def test_agent_judged_runs_reuse_their_verdicts(serve_tape, tmp_path: Path) -> None:
    server = serve_tape(judge_tape(goal_json(8), audit_json([1, 2])))
    loaded = load_config(str(project(tmp_path / "p", server.url) / "axis.config.json"))
    env = {"PATH": "/usr/bin:/bin"}
    scorer = JudgeScorer.for_config(loaded, {}, env, policy=FAST)
    done = await run_async(
        RunOptions(loaded=loaded, scorer=scorer, environ=env, handle_signals=False)
    )
    # The same report, as if an agent had judged it: no API judge in the config any more.
    agent_config = json.loads((tmp_path / "p" / "axis.config.json").read_text())
    agent_config["judging"] = {"agents": ["events"]}
    (tmp_path / "p" / "axis.config.json").write_text(json.dumps(agent_config))
    loaded = load_config(str(tmp_path / "p" / "axis.config.json"))
    calls = len(server.requests)
    result = await rescore_report(done.report_dir, loaded, environ=env)
    assert len(server.requests) == calls and result.calls == 0
    stored = RunResult.model_validate_json(
        (done.report_dir / done.manifest.results[0].runs[0].dir / "result.json").read_bytes()
    )
    before = ScoreResult.model_validate(stored.run.score)
    after = result.runs[0].score
    assert after is not None and after.axis_score == before.axis_score
    assert any("agent-judge verdicts reused" in n for n in after.notes)
    assert verdicts_from_score(before).checks == before.checks


async def test_axis_score_of_a_no_score_run_saves_the_index_the_judge_saw(
    serve_tape, tmp_path: Path
) -> None:
    """``--no-score`` writes no sparse-index.txt (the scorer's file, as in AXIS); scoring the
    report later saves the very index the judges were shown, beside the new score."""
    server = serve_tape(judge_tape(goal_json(7), audit_json([1, 2])))
    root = project(tmp_path / "p", server.url)
    scenario = json.loads((root / "scenarios" / "hello.json").read_text())
    scenario["judge"] = [{"check": "the answer says what the file holds", "weight": 1}]
    (root / "scenarios" / "hello.json").write_text(json.dumps(scenario))
    loaded = load_config(str(root / "axis.config.json"))
    env = {"PATH": "/usr/bin:/bin"}
    done = await run_async(
        RunOptions(loaded=loaded, environ=env, handle_signals=False, score=False)
    )
    run = done.manifest.results[0].runs[0]
    folder = done.report_dir / run.dir
    assert run.score is None and not (folder / "sparse-index.txt").exists()
    assert server.requests == []

    result = await rescore_report(done.report_dir, loaded, environ=env, policy=FAST)
    [new] = result.runs
    assert new.score is not None and not new.score.withheld, new.reason
    assert new.sparse_index is not None
    save_rescore(done.report_dir, result)
    saved = RunResult.model_validate_json((folder / "result.json").read_bytes())
    assert saved.files["sparseIndex"] == f"{run.dir}/sparse-index.txt"
    assert (folder / "sparse-index.txt").read_text() == new.sparse_index.render()
    agent = done.manifest.results[0].agent_name
    assert new.sparse_index.header()[0] == f"# Sparse Index: hello / {agent}"
