"""An agent judge: the real Claude Code CLI judging a run, its model scripted by a tape.

Needs the pinned ``claude`` under ``AXIS_AGENTS_DIR`` (``make agents``); skipped loudly
without it, and failed under ``CI=true``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from axis_eval.adapters import install
from axis_eval.adapters.builtins import BUILTINS
from axis_eval.adapters.loader import load_adapter
from axis_eval.config.models import Judging
from axis_eval.scoring.scorer import JudgeScorer
from helpers.system_parts import not_run

from .helpers import audit_json, goal_json, judge_tape, outcome, scenario, simple_transcript

pytestmark = pytest.mark.slow  # runs judges against a scripted model server

FAKE_KEY = "sk-axis-judge-test-not-a-key"


def _claude() -> Path:
    found = install.installed_binary("claude-code")
    if found is None:
        not_run(
            "AGENT-JUDGE TEST",
            f"claude-code is not installed under {install.agents_dir()} (run `make agents`)",
        )
    return found


@pytest.mark.slow
async def test_claude_code_judges_a_run(serve_tape, tmp_path: Path) -> None:
    _claude()
    server = serve_tape(judge_tape(goal_json(10, 7), audit_json([1, 2])))
    adapter = load_adapter(BUILTINS["claude-code"])
    scorer = JudgeScorer(
        judging=Judging(agents=["claude-code"], timeout_seconds=120),
        config_dir=tmp_path,
        adapters={"claude-code": adapter},
        parent_env={"PATH": os.environ["PATH"], "ANTHROPIC_API_KEY": FAKE_KEY},
        model_server_url=server.url,
        tmp_base=str(tmp_path),
    )
    checks = [("hello.txt exists", 0.5, None), ("it says Hello", 0.5, None)]
    result = await scorer.score(outcome(scenario(checks), simple_transcript()), tmp_path)
    assert result is not None and not result.withheld, result and result.withheld_reason
    assert [c.score for c in result.checks] == [10, 7]
    assert {a.interaction_id for a in result.audits} == {1, 2}
    assert result.judge.kind == "agent" and result.judge.judge == "claude-code"
    assert result.judge.calls == 2 and result.judge.input_tokens > 0
    main = [r for r in server.requests if not r.side]
    assert sorted(r.conversation or "" for r in main) == ["audit", "goal"]
    assert server.connect_attempts == []
    assert not list((tmp_path / ".axis").glob("judge-cache/*"))  # agent answers: no cache
