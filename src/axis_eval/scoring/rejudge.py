"""What ``axis score ID --rejudge K`` will cost, estimated before any call.

Per run that re-scoring scores (completed, not failed: a withheld score may score now; an
upper bound, as a run still withheld is not re-judged) and per re-judgment:

- calls: the calls its stored score's judging made (cached or not), at least 2 (the goal
  judgment and one interaction audit);
- input tokens: ``2 × ⌈characters of the run's sparse index / 4⌉`` (the goal judgment sees
  the whole index; the audits see it once more, chunk by chunk) plus
  :data:`PROMPT_TOKENS` per call for the instructions and the rubric;
- output tokens: :data:`OUTPUT_TOKENS` per call.

Times K. The dollars come from the judge model's list price (``adapters.prices``); a model
not in the table gets no figure. A judge that asks the scripted model server (the config's
``model_server`` and no ``base_url``) is simulated: its tokens are the tape's accounting and
no money is spent. An agent judge is priced by its model, when the table knows it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from axis_eval._types import TokenUsage
from axis_eval.adapters.prices import estimate_cost
from axis_eval.config.models import LoadedConfig
from axis_eval.execute.scripted_model import EmbeddedModelServer
from axis_eval.planning.models import JobSpec
from axis_eval.report.models import RESULT_FILE, ReportManifest, RunResult
from axis_eval.scoring.judge import choose_judge, judged_on_model_server, on_model_server
from axis_eval.scoring.panel import panel_choices
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import build_sparse_index

PROMPT_TOKENS = 1_500
"""Instructions, rubric and answer schema of one judge call (a rough, fixed allowance)."""
OUTPUT_TOKENS = 400
"""One judge answer (verdict JSON with rationales)."""


@dataclass
class RejudgeEstimate:
    """The estimate shown before re-judging starts."""

    rejudge: int
    runs: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """None: no judge model of these runs is in the price table (or all are simulated)."""
    unpriced: list[str] = field(default_factory=list)
    """Judges with no price (shown by name)."""
    simulated: bool = False
    """Every re-judgment asks the scripted model server."""
    judges: list[str] = field(default_factory=list)

    def line(self) -> str:
        """``re-judging 4 runs × 2: ≈16 judge calls, ≈21,000 tokens in / 6,400 out, ≈$0.0830``."""
        head = (
            f"re-judging {self.runs} run{'s' if self.runs != 1 else ''} × {self.rejudge} "
            f"({', '.join(self.judges) or 'no judge'}): ≈{self.calls} judge calls, "
            f"≈{self.input_tokens:,} tokens in / {self.output_tokens:,} out"
        )
        if self.simulated:
            return head + ", simulated (the scripted model server: no money spent)"
        if self.cost_usd is None:
            return head + f", cost unknown ({', '.join(self.unpriced)} not in the price table)"
        money = f"≈${self.cost_usd:.4f} (estimated from list prices)"
        if self.unpriced:
            money += f" + unknown for {', '.join(self.unpriced)}"
        return head + ", " + money


def estimate_rejudge(
    report_dir: Path,
    judging: Any,
    rejudge: int,
    *,
    judge: str | None = None,
    model_server_url: str | None = None,
) -> RejudgeEstimate:
    """Estimate K re-judgments of every scored run of the report (see the module docstring).

    Raises:
        ConfigError: a malformed ``--judge provider:model``.
    """
    manifest = ReportManifest.model_validate_json((report_dir / "report.json").read_bytes())
    out = RejudgeEstimate(rejudge=rejudge)
    cost = 0.0
    priced = False
    all_simulated = True
    for pair in manifest.results:
        for entry in pair.runs:
            score = entry.score
            if entry.status != "completed" or entry.failed:
                continue  # never scored, so never re-judged
            try:
                result = RunResult.model_validate_json(
                    (report_dir / entry.dir / RESULT_FILE).read_bytes()
                )
                spec = JobSpec.model_validate(result.spec)
                path = result.files.get("transcript")
                transcript = (
                    Transcript.model_validate_json((report_dir / path).read_bytes())
                    if path
                    else Transcript(agent=spec.agent.adapter)
                )
            except (OSError, ValidationError, ValueError):
                continue  # rescoring reports the unreadable run
            index = build_sparse_index(
                transcript, scenario_key=spec.scenario.key, agent_name=spec.agent.name
            )
            # A panel (no --judge): every member re-judges, each with its share of the calls.
            members = (panel_choices(judging, spec.agent) if judge is None else []) or [
                choose_judge(judging, spec.agent, judge)
            ]
            judged = score.judge if score is not None else None
            each_calls = max(2, (judged.calls if judged else 0) // len(members))
            usage = TokenUsage(
                input=2 * math.ceil(len(index.render()) / 4) + each_calls * PROMPT_TOKENS,
                output=each_calls * OUTPUT_TOKENS,
            )
            out.runs += 1
            for member in members:
                choice = on_model_server(member, model_server_url)
                out.calls += each_calls * rejudge
                out.input_tokens += usage.input * rejudge
                out.output_tokens += usage.output * rejudge
                if choice.label not in out.judges:
                    out.judges.append(choice.label)
                if judged_on_model_server(choice, model_server_url):
                    continue
                all_simulated = False
                model = choice.model
                if choice.kind == "agent" and choice.agent is not None:
                    model = choice.agent.model
                each = estimate_cost(model, usage)
                if each is None:
                    if choice.label not in out.unpriced:
                        out.unpriced.append(choice.label)
                    continue
                cost += each * rejudge
                priced = True
    out.simulated = out.runs > 0 and all_simulated
    out.cost_usd = round(cost, 4) if priced else None
    return out


@contextmanager
def judge_model_server(loaded: LoadedConfig) -> Iterator[str | None]:
    """The config's embedded scripted model server (``model_server``) while re-judging,
    as in ``axis run``: API judges without ``base_url`` ask it. Yields its URL, or None
    when the config has none.

    Raises:
        ConfigError: the tape does not load.
    """
    settings = loaded.config.model_server
    if settings is None:
        yield None
        return
    server = EmbeddedModelServer(settings, loaded.config_dir)
    try:
        yield server.url
    finally:
        server.server.stop()
