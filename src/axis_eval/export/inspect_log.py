"""``axis export --inspect FILE``: a report as an Inspect AI eval log (docs/export.md).

One sample per run: its ``id`` names the pair (``<scenarioKey>/<agentName>``) and its
``epoch`` is the run index, so a pair's repeats read as Inspect's epochs of one input.
The messages are the transcript in order (the prompt, the agent's text, each tool call on
an assistant message followed by its result); the scores are the composite, the four
dimensions and the rubric checks; the token usage is ``model_usage``. A run without a
transcript (cancelled, or crashed before writing one) is still a sample, with its error.

The header (spec, results, stats) comes from the manifest alone; the samples follow,
written one run at a time (each run's transcript is read only while it is written), in
the JSON log format through an atomic rename. Everything written passes through the
current environment's redactor, on top of the report's own redaction.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from axis_eval._types import SCORES, TokenUsage, camel
from axis_eval._version import __version__
from axis_eval.errors import UsageError
from axis_eval.export.inspect_models import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Content,
    ContentReasoning,
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    EvalStatus,
    ModelOutput,
    ModelUsage,
    Score,
    ToolCall,
    ToolCallError,
)
from axis_eval.export.report_runs import ReportRun, iter_runs
from axis_eval.files import atomic_write_chunks
from axis_eval.redact import Redactor
from axis_eval.report.models import PairEntry, ReportManifest, RunEntry
from axis_eval.scoring.models import ScoreResult
from axis_eval.transcript.models import Transcript

TASK = "axis"
"""Inspect's task name for every exported report (the report's name is the dataset's)."""

RUBRIC = "rubric"
"""The score holding the rubric checks (check text → 0–10)."""

_STATUS: dict[str, EvalStatus] = {
    "finished": "success",
    "running": "started",
    "interrupted": "cancelled",
    "crashed": "error",
}


def write_inspect_log(folder: Path, manifest: ReportManifest, out: Path) -> int:
    """Write the report in ``folder`` to ``out`` as an Inspect AI JSON eval log; the number
    of samples written (one per run). ``out`` must end in ``.json``: Inspect's ``.eval``
    zip format is not written (exit 2, saying so)."""
    if out.suffix.lower() == ".eval":
        raise UsageError(
            f"--inspect {out}: the .eval (zip) log format is not written",
            hint="give a FILE ending in .json: Inspect's JSON log format, which "
            "`inspect view` and inspect_ai.log.read_eval_log read as well",
        )
    redact = Redactor.from_env(os.environ, os.environ)
    header = redact.json_text(log_header(folder, manifest).model_dump_json(exclude_none=True))
    if not header.endswith("}"):  # pragma: no cover - a model always dumps an object
        raise AssertionError("the log header is not a JSON object")
    written = 0

    def chunks() -> Iterator[bytes]:
        nonlocal written
        yield (header[:-1] + ',"samples":[').encode("utf-8")
        for item in iter_runs(folder, manifest):
            text = sample(item).model_dump_json(exclude_none=True)
            yield ((b"," if written else b"") + redact.json_text(text).encode("utf-8"))
            written += 1
        yield b"]}"

    try:
        atomic_write_chunks(out, chunks())
    except OSError as exc:
        raise UsageError(f"--inspect {out}: cannot write the file: {exc.strerror or exc}") from exc
    return written


# --- the header: spec, plan, results, stats (from the manifest alone) ---------------------


def log_header(folder: Path, manifest: ReportManifest) -> EvalLog:
    """The log without its samples."""
    runs = [(pair, run) for pair in manifest.results for run in pair.runs]
    status = _STATUS.get(manifest.state, "started")
    error = None
    if status == "error":
        error = EvalError(message=manifest.error or f"the run ended {manifest.state}")
    return EvalLog(
        status=status,
        eval=EvalSpec(
            eval_id=_stable_id("eval", manifest.report_id),
            run_id=_stable_id("run", manifest.report_id),
            created=manifest.started_at,
            task=TASK,
            task_id=_stable_id("task", manifest.report_id),
            dataset=EvalDataset(
                name=manifest.name or manifest.report_id,
                location=str(folder),
                samples=len(runs),
                sample_ids=sorted({sample_id(pair) for pair, _ in runs}),
            ),
            model=_eval_model(manifest),
            config=EvalConfig(epochs=max((p.run_count for p in manifest.results), default=1)),
            packages={"axis-eval": __version__},
            metadata={
                "reportId": manifest.report_id,
                "profile": manifest.profile,
                "state": manifest.state,
                "configPath": manifest.config_path,
            },
        ),
        plan=EvalPlan(
            steps=[
                EvalPlanStep(solver=agent, params={"adapter": adapter})
                for agent, adapter in sorted({(p.agent_name, p.agent) for p in manifest.results})
            ]
        ),
        results=EvalResults(
            total_samples=len(runs),
            completed_samples=sum(1 for _, run in runs if run.status == "completed"),
            scores=_aggregate_scores([run.score for _, run in runs]),
        ),
        stats=EvalStats(
            started_at=manifest.started_at,
            completed_at=manifest.timestamp if status != "started" else "",
            model_usage=_total_usage(runs),
        ),
        error=error,
        metadata={"axisVersion": manifest.version, "tool": manifest.tool.model_dump()},
    )


def sample_id(pair: PairEntry) -> str:
    """A pair's sample id: ``<scenarioKey>/<agentName>``."""
    return f"{pair.scenario_key}/{pair.agent_name}"


def _stable_id(kind: str, report_id: str) -> str:
    """The same id for the same report, every export (a UUID5 of the report id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"axis-eval:{kind}:{report_id}"))


def _eval_model(manifest: ReportManifest) -> str:
    models = sorted({p.model or p.agent_name for p in manifest.results})
    return models[0] if len(models) == 1 else ", ".join(models) or "none"


def _usage_key(pair: PairEntry) -> str:
    """The ``model_usage`` key: the pair's model, else its agent's name."""
    return pair.model or pair.agent_name


def model_usage(usage: TokenUsage | None, cost: float | None) -> ModelUsage | None:
    """A run's tokens as Inspect counts them (total = input + output + cache reads)."""
    if usage is None:
        return None
    return ModelUsage(
        input_tokens=usage.input,
        output_tokens=usage.output,
        total_tokens=usage.total,
        input_tokens_cache_read=usage.cache_read_input,
        input_tokens_cache_write=usage.cache_write_input,
        total_cost=cost,
    )


def _total_usage(runs: list[tuple[PairEntry, RunEntry]]) -> dict[str, ModelUsage]:
    totals: dict[str, TokenUsage] = {}
    costs: dict[str, float | None] = {}
    for pair, run in runs:
        if run.token_usage is None:
            continue
        key = _usage_key(pair)
        totals[key] = totals.get(key, TokenUsage()) + run.token_usage
        cost = run.total_cost_usd
        if key not in costs:
            costs[key] = cost
        elif cost is not None:
            costs[key] = (costs[key] or 0.0) + cost
    out = {}
    for key, total in totals.items():
        usage = model_usage(total, costs.get(key))
        if usage is not None:
            out[key] = usage
    return out


def _aggregate_scores(scores: list[ScoreResult | None]) -> list[EvalScore]:
    """Per score (composite and dimensions): the mean over the runs that have it."""
    out = []
    for name in SCORES:
        values = [
            float(v) for s in scores if s is not None and (v := s.dimension(name)) is not None
        ]
        key = camel(name)
        metrics = {}
        if values:
            metrics["mean"] = EvalMetric(name="mean", value=round(sum(values) / len(values), 4))
        out.append(
            EvalScore(
                name=key,
                scorer=key,
                scored_samples=len(values),
                unscored_samples=len(scores) - len(values),
                metrics=metrics,
            )
        )
    return out


# --- one sample per run -------------------------------------------------------------------


def sample(item: ReportRun) -> EvalSample:
    """A run as a sample: messages from its transcript, scores, usage, metadata, error."""
    pair, run = item.pair, item.run
    transcript = item.transcript()
    model = (transcript.model if transcript else None) or pair.model
    messages = _messages(pair.prompt, transcript, model)
    answer = run.result or (transcript.result if transcript else None)
    if answer and not _ends_with(messages, answer):
        messages.append(ChatMessageAssistant(content=answer, model=model))
    usage = model_usage(run.token_usage, run.total_cost_usd)
    last = next(
        (m for m in reversed(messages) if isinstance(m, ChatMessageAssistant)),
        None,
    )
    output = ModelOutput(
        model=model or "",
        choices=[ChatCompletionChoice(message=last, stop_reason="stop")] if last else [],
        completion=answer or "",
        usage=usage,
        error=run.error,
    )
    return EvalSample(
        id=sample_id(pair),
        epoch=max(run.run_index, 1),
        input=pair.prompt,
        target=pair.judge if isinstance(pair.judge, str) else "",
        messages=messages,
        output=output,
        scores=scores(run.score),
        metadata=_metadata(item, model),
        model_usage={_usage_key(pair): usage} if usage else {},
        started_at=run.started_at,
        completed_at=run.ended_at,
        total_time=round(run.duration_ms / 1000, 3),
        uuid=_stable_id(f"sample:{run.dir}", item.manifest.report_id),
        error=_error(run),
    )


def _metadata(item: ReportRun, model: str | None) -> dict[str, Any]:
    pair, run = item.pair, item.run
    score = run.score
    return {
        "scenario": pair.scenario_key,
        "scenarioName": pair.scenario_name,
        "agent": pair.agent_name,
        "adapter": pair.agent,
        "model": model,
        "runIndex": run.run_index,
        "reportId": item.manifest.report_id,
        "status": run.status,
        "failed": run.failed,
        "exitCode": run.exit_code,
        "withheldReason": score.withheld_reason if score is not None else None,
    }


def _error(run: RunEntry) -> EvalError | None:
    if run.status == "completed" and not run.failed:
        return None
    kind = f" ({run.error_kind})" if run.error_kind else ""
    return EvalError(message=run.error or f"the run {run.status}{kind}")


def scores(score: ScoreResult | None) -> dict[str, Score] | None:
    """The composite, the four dimensions and the rubric; None when unscored or withheld."""
    if score is None or score.withheld:
        return None
    out: dict[str, Score] = {}
    for name in SCORES:
        value = score.dimension(name)
        if value is not None:
            out[camel(name)] = Score(value=value)
    if score.insights:
        out["axisScore"].explanation = "\n".join(score.insights)
    if score.checks:
        out[RUBRIC] = Score(
            value={c.check: c.score for c in score.checks},
            explanation="\n".join(
                f"{c.check}: {c.score}/10" + (f" — {c.rationale}" if c.rationale else "")
                for c in score.checks
            ),
            metadata={"checks": [c.model_dump(mode="json") for c in score.checks]},
        )
    return out


# --- messages -------------------------------------------------------------------------------


def _messages(prompt: str, transcript: Transcript | None, model: str | None) -> list[ChatMessage]:
    """The prompt, then the transcript's steps in order; each tool call goes on the
    assistant message before it (a new, empty one after a tool result) and its result
    follows as a tool message."""
    messages: list[ChatMessage] = []
    entries = transcript.entries if transcript else []
    if not entries or entries[0].type != "user":
        messages.append(ChatMessageUser(content=prompt, source="input"))
    for entry in entries:
        text = entry.text or ""
        if entry.type == "user":
            source = "input" if not messages else None
            messages.append(ChatMessageUser(content=text, source=source))
        elif entry.type == "assistant":
            messages.append(ChatMessageAssistant(content=text, model=model))
        elif entry.type == "thinking":
            reasoning: list[Content] = [ContentReasoning(reasoning=text)]
            messages.append(ChatMessageAssistant(content=reasoning, model=model))
        elif entry.type in ("system", "error"):
            messages.append(ChatMessageSystem(content=text, metadata={"axisEntry": entry.type}))
        elif entry.tool is not None:
            call = entry.tool
            holder = messages[-1] if messages else None
            if not isinstance(holder, ChatMessageAssistant):
                holder = ChatMessageAssistant(content="", model=model)
                messages.append(holder)
            arguments = call.input if isinstance(call.input, dict) else {"input": call.input}
            holder.tool_calls = [
                *(holder.tool_calls or []),
                ToolCall(id=call.id, function=call.name, arguments=arguments),
            ]
            output = call.output or ""
            messages.append(
                ChatMessageTool(
                    content=output,
                    tool_call_id=call.id,
                    function=call.name,
                    error=ToolCallError(message=output or "failed") if call.is_error else None,
                )
            )
    return messages


def _ends_with(messages: list[ChatMessage], answer: str) -> bool:
    last = messages[-1] if messages else None
    return isinstance(last, ChatMessageAssistant) and last.content == answer
