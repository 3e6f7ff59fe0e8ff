"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axis_eval.config.models import Judging
from axis_eval.config.scenario import ResolvedCheck, Scenario
from axis_eval.execute.models import JobOutcome
from axis_eval.planning.models import AgentSpec, JobSpec
from axis_eval.scoring.retry import RetryPolicy
from axis_eval.scoring.scorer import JudgeScorer
from axis_eval.transcript.models import Entry, ToolCall, Transcript

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


AGENT = AgentSpec(name="claude-code", adapter="claude-code")


def tool_entry(n: int, name: str, args: Any, output: str, *, error: bool = False) -> Entry:
    """A paired tool call entry."""
    return Entry(
        type="tool",
        timestamp="2026-01-01T00:00:00.000Z",
        offset_ms=n * 100,
        tool=ToolCall(
            id=f"call-{n}", name=name, input=args, output=output, is_error=error, duration_ms=40
        ),
    )


def transcript(*entries: Entry, result: str = "Done: hello.txt says Hello.") -> Transcript:
    """A transcript: the prompt, the given entries, the final answer."""
    return Transcript(
        agent="claude-code",
        entries=[
            Entry(type="user", timestamp="2026-01-01T00:00:00.000Z", text="Create hello.txt"),
            *entries,
            Entry(type="assistant", timestamp="2026-01-01T00:00:09.000Z", text=result),
        ],
        result=result,
    )


def simple_transcript() -> Transcript:
    """Two shell calls and a read."""
    return transcript(
        tool_entry(1, "Bash", {"command": "printf Hello > hello.txt"}, ""),
        tool_entry(2, "Read", {"file_path": "hello.txt"}, "Hello"),
    )


def scenario(checks: list[tuple[str, float, str | None]] | str) -> Scenario:
    """A scenario with a string judge or (check, weight, run) checks."""
    judge: str | list[ResolvedCheck] = (
        checks
        if isinstance(checks, str)
        else [ResolvedCheck(check=c, weight=w, run=r) for c, w, r in checks]
    )
    return Scenario(
        key="demo/hello",
        base_key="demo/hello",
        name="Hello",
        prompt="Create hello.txt",
        judge=judge,
    )


def outcome(
    scen: Scenario, trans: Transcript | None, *, status: str = "completed", number: int = 1
) -> JobOutcome:
    """A finished job of ``scen`` with ``trans``."""
    spec = JobSpec(
        number=number,
        scenario=scen,
        agent=AGENT,
        run_index=1,
        run_count=1,
        time_limit_s=60,
        config_dir="/tmp",
    )
    return JobOutcome(
        spec=spec,
        status=status,
        failed=status == "failed",
        transcript=trans,  # type: ignore[arg-type]
    )


def goal_json(*scores: int) -> str:
    return json.dumps(
        {
            "checks": [
                {"index": i, "score": s, "rationale": f"check {i}"} for i, s in enumerate(scores, 1)
            ]
        }
    )


def audit_json(
    ids: list[int], success: float = 1.0, necessity: dict[str, float] | None = None
) -> str:
    cats = necessity if necessity is not None else {"environment": 1.0}
    return json.dumps(
        {
            "audits": [
                {"id": i, "success": success, "weight": 1.0, "relevance": 1.0, "rationale": "ok"}
                for i in ids
            ],
            "necessity": {
                c: {"score": s, "unnecessary_ids": [], "rationale": "needed"}
                for c, s in cats.items()
            },
        }
    )


def judge_tape(goal: str, audit: str, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A tape answering the goal judgment and the interaction audit."""
    return {
        "version": 1,
        "conversations": [
            *(extra or []),
            {"name": "goal", "match": "GOAL JUDGMENT", "turns": [{"text": goal}]},
            {"name": "audit", "match": "INTERACTION AUDIT", "turns": [{"text": audit}]},
        ],
    }


def make_scorer(
    base_url: str,
    tmp: Path,
    *,
    provider: str = "anthropic",
    context_tokens: int = 150_000,
    concurrency: int = 8,
    **options: Any,
) -> JudgeScorer:
    """A scorer with an API judge at ``base_url`` and its cache under ``tmp``."""
    url = base_url if provider == "anthropic" else base_url + "/v1"
    judging = Judging(
        model=f"{provider}:judge-model",
        base_url=url,
        context_tokens=context_tokens,
        concurrency=concurrency,
    )
    options.setdefault("policy", FAST)
    options.setdefault("parent_env", {"PATH": "/usr/bin:/bin"})
    return JudgeScorer(judging=judging, config_dir=tmp, **options)


# ---------------------------------------------------------------------- the failing stub


@dataclass
class Stub:
    """An Anthropic-compatible stub: scripted statuses first, then verdict answers."""

    statuses: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """(status, headers) answered in order before any success."""
    default_status: tuple[int, dict[str, str]] | None = None
    """Answered once ``statuses`` is used up; None = success."""
    delay_s: float = 0.0
    delays: list[float] = field(default_factory=list)
    """Per-request delays, used first (then ``delay_s``)."""
    goal: str = ""
    audit: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[tuple[float, int, int]] = field(default_factory=list)
    """(time, in flight on arrival, status answered)."""
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            status, headers = (
                self.statuses.pop(0) if self.statuses else (self.default_status or (200, {}))
            )
            self.arrivals.append((time.monotonic(), self.in_flight, status))
            delay = self.delays.pop(0) if self.delays else self.delay_s
        try:
            time.sleep(delay)
            if status != 200:
                return (
                    status,
                    headers,
                    {"type": "error", "error": {"type": "x", "message": f"HTTP {status}"}},
                )
            text = self.goal if "GOAL JUDGMENT" in json.dumps(body) else self.audit
            return (
                200,
                {},
                {
                    "id": "msg_stub",
                    "type": "message",
                    "role": "assistant",
                    "model": "judge-model",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 10},
                },
            )
        finally:
            with self.lock:
                self.in_flight -= 1
