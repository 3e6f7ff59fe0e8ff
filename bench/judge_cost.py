#!/usr/bin/env python3
"""Judge cost per scored run: calls and input tokens against the transcript's own size.

Run by hand (never from tests):  .venv/bin/python bench/judge_cost.py [--context 150000,32000]

For each fixed transcript in bench/transcripts/ and each judge context size, it scores the
run with the API judge (Anthropic SDK) against the scripted model server on 127.0.0.1 and
reads the server's request log: judge calls, and judge input tokens as the server counts
them (characters of the canonical request JSON / 4, system prompt included). Then it scores
the same run again with a fresh scorer and the same answer cache: unchanged re-scoring
must make zero calls. Deterministic checks are given as passed (no workspace here).

The transcript's own size is counted the same way: the canonical JSON of its content
(messages and thinking as role + text, tool calls as name + input + output) / 4, without
timestamps, ids or other metadata.

Targets (issue 5): the transcript is sent once per judgment kind (the goal judgment and the
audit each read it once; more only when split into parts), judge input <= 2.2 x the
transcript's tokens, re-scoring unchanged = 0 calls. AXIS spends four judge agent runs per
scored run (goal + one per category), each an agent session of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from axis_eval.config.models import Judging
from axis_eval.config.scenario import JudgeCheck, Scenario, resolve_weights
from axis_eval.planning.models import AgentSpec
from axis_eval.scoring.checks import rubric_of
from axis_eval.scoring.models import CheckVerdict
from axis_eval.scoring.scorer import JudgeScorer
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import build_sparse_index
from axis_model_server import ScriptedModelServer, parse_tape
from axis_model_server.normalize import canonical_json, tokens_for

HERE = Path(__file__).resolve().parent
AGENT = AgentSpec(name="claude-code", adapter="claude-code")
NECESSITY = {c: {"score": 1.0} for c in ("environment", "service", "agent")}


def tape() -> dict[str, Any]:
    """Answers for goal judgments of 1 to 5 checks, and an audit valid for any part."""
    goals = [
        {
            "name": f"goal-{n}",
            "match": f"score checks 1 to {n} as JSON",
            "turns": [
                {
                    "text": json.dumps(
                        {
                            "checks": [
                                {"index": i, "score": 9, "rationale": "met"}
                                for i in range(1, n + 1)
                            ]
                        }
                    )
                }
            ],
        }
        for n in range(1, 6)
    ]
    audit = {
        "name": "audit",
        "match": "INTERACTION AUDIT",
        "turns": [{"text": json.dumps({"audits": [], "necessity": NECESSITY})}],
    }
    return {"version": 1, "conversations": [*goals, audit]}


def transcript_tokens(transcript: Transcript) -> int:
    """The transcript's content as canonical JSON / 4 (the server's way of counting)."""
    content: list[dict[str, Any]] = []
    for entry in transcript.entries:
        if entry.tool is not None:
            t = entry.tool
            content.append({"tool": t.name, "input": t.input, "output": t.output})
        else:
            content.append({"role": entry.type, "text": entry.text})
    return tokens_for(canonical_json(content))


def load(path: Path) -> tuple[Scenario, Transcript]:
    body = json.loads(path.read_text())
    s = body["scenario"]
    checks = [JudgeCheck.model_validate(c) for c in s["judge"]]
    scenario = Scenario(
        key=path.stem,
        base_key=path.stem,
        name=s["name"],
        prompt=s["prompt"],
        judge=resolve_weights(checks),
    )
    return scenario, Transcript.model_validate(body["transcript"])


async def score_once(
    server: ScriptedModelServer,
    cache_dir: Path,
    scenario: Scenario,
    transcript: Transcript,
    context: int,
) -> dict[str, Any]:
    judging = Judging(
        model="anthropic:claude-sonnet-4-5", base_url=server.url, context_tokens=context
    )
    scorer = JudgeScorer(judging=judging, config_dir=cache_dir, parent_env={})
    index = build_sparse_index(transcript, scenario_key=scenario.key, agent_name=AGENT.name)
    passed = {
        c.position: CheckVerdict(
            check=c.text, weight=c.weight, score=10, kind="deterministic", command=c.run
        )
        for c in rubric_of(scenario)
        if c.run
    }
    server.reset_log()
    verdicts = await scorer.verdicts_for(transcript, index, scenario, AGENT, passed, workspace=None)
    if verdicts.withheld_reason:
        raise SystemExit(f"{scenario.key}: withheld: {verdicts.withheld_reason}")
    records = [r for r in server.requests if r.protocol == "anthropic"]
    goal = [r for r in records if (r.conversation or "").startswith("goal")]
    audit = [r for r in records if r.conversation == "audit"]
    return {
        "calls": len(records),
        "goal_calls": len(goal),
        "audit_calls": len(audit),
        "goal_in": sum(r.usage.input_tokens for r in goal),
        "audit_in": sum(r.usage.input_tokens for r in audit),
        "input": sum(r.usage.input_tokens for r in records),
        "interactions": len(index.interactions),
    }


async def main(contexts: list[int]) -> int:
    fixtures = sorted((HERE / "transcripts").glob("*.json"))
    rows, misses = [], []
    zero = True
    with ScriptedModelServer(parse_tape(tape())) as server:
        for path in fixtures:
            scenario, transcript = load(path)
            size = transcript_tokens(transcript)
            for context in contexts:
                with tempfile.TemporaryDirectory() as cache:
                    first = await score_once(server, Path(cache), scenario, transcript, context)
                    again = await score_once(server, Path(cache), scenario, transcript, context)
                ratio = first["input"] / size
                once = first["goal_calls"] <= 1 and first["audit_calls"] <= 1
                kinds = (first["goal_calls"] > 0) + (first["audit_calls"] > 0)
                fixed = first["input"] - kinds * size
                zero = zero and again["calls"] == 0
                if once and ratio > 2.2 and path.stem not in str(misses):
                    misses.append(f"{path.stem} ({size:,} tokens; fixed part {fixed:,})")
                rows.append(
                    f"| {path.stem} | {first['interactions']} | {size:,} | {context:,} "
                    f"| {first['goal_calls']} + {first['audit_calls']} "
                    f"| {first['goal_in']:,} ({first['goal_in'] / size:.2f}x) "
                    f"| {first['audit_in']:,} ({first['audit_in'] / size:.2f}x) "
                    f"| {first['input']:,} (**{ratio:.2f}x**) | {fixed:,} | {again['calls']} |"
                )
    print(
        "| transcript | interactions | transcript tokens | judge context | calls (goal + audit) "
        "| goal input | audit input | judge input | fixed part | re-score calls |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nfixed part = judge input - transcript tokens x judgment kinds (instructions, task,")
    print("markers, index lines; in parts, also the sparse index and final answer per part).")
    print("AXIS spends 4 judge agent runs per scored run.")
    print(f"Re-scoring unchanged makes zero calls: {'yes' if zero else 'NO'}.")
    if misses:
        print("Over 2.2x without parts (the fixed part dominates): " + "; ".join(misses) + ".")
    return 0 if zero else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--context", default="150000,32000", help="judge context sizes (tokens)")
    args = parser.parse_args()
    sys.exit(asyncio.run(main([int(x) for x in args.context.split(",")])))
