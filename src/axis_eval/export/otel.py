"""A report's runs as OpenTelemetry traces, following the GenAI semantic conventions.

Each run is one trace: an ``invoke_agent`` span (the agent, its models, its token usage,
the scenario and report as ``axis.*`` attributes, status error for a failed run) with an
``execute_tool`` child span per tool call of its transcript (``gen_ai.tool.name``,
``gen_ai.tool.call.id``, timed from the call's own timestamps or the transcript offsets,
status error when the call failed). The AXIS scores are ``gen_ai.evaluation.result``
events on the ``invoke_agent`` span: the composite, the four dimensions and each rubric
check. Trace and span ids are derived from the report id and the run, so exporting the
same report again gives the same ids (a back end de-duplicates a re-export). Every string
goes through the redactor. :mod:`.otel_send` writes the spans to a file or an endpoint.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from axis_eval._types import camel
from axis_eval._version import __version__
from axis_eval.export.otel_models import (
    STATUS_ERROR,
    AnyValue,
    InstrumentationScope,
    KeyValue,
    Resource,
    Span,
    SpanEvent,
    Status,
)
from axis_eval.export.report_runs import ReportRun
from axis_eval.redact import Redactor
from axis_eval.report.models import RunEntry
from axis_eval.scoring.models import ScoreResult
from axis_eval.transcript.models import Transcript

SCOPE = InstrumentationScope(name="axis_eval.export.otel", version=__version__)
SEMCONV_SCHEMA = "https://opentelemetry.io/schemas/1.37.0"
EVALUATION_EVENT = "gen_ai.evaluation.result"
TOOL_TEXT_CHARS = 8_000
"""A tool call's arguments or result is cut to this many characters in its span."""

DIMENSIONS = ("axis_score", "goal_achievement", "environment", "service", "agent")
"""The composite and the four dimensions, each an evaluation named by its camelCase key."""

Attr = str | int | float | bool | None


def resource() -> Resource:
    """``service.name=axis-eval`` and ``service.version``."""
    return Resource(
        attributes=attributes(
            Redactor(), {"service.name": "axis-eval", "service.version": __version__}
        )
    )


def attributes(redact: Redactor, values: dict[str, Attr]) -> list[KeyValue]:
    """``values`` as OTLP attributes, None values left out, every string redacted."""
    out = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            any_value = AnyValue(bool_value=value)
        elif isinstance(value, int):
            any_value = AnyValue(int_value=str(value))
        elif isinstance(value, float):
            any_value = AnyValue(double_value=value)
        else:
            any_value = AnyValue(string_value=redact.text(value))
        out.append(KeyValue(key=key, value=any_value))
    return out


def trace_id(report_id: str, run: ReportRun) -> str:
    """The run's trace id: 32 hex digits from the report id, the pair and the run index."""
    return _digest("trace", report_id, run, 0)[:32]


def span_id(report_id: str, run: ReportRun, n: int) -> str:
    """Span ``n`` of the run (0: ``invoke_agent``, then each tool call): 16 hex digits."""
    return _digest("span", report_id, run, n)[:16]


def _digest(kind: str, report_id: str, run: ReportRun, n: int) -> str:
    key = [kind, report_id, run.pair.scenario_key, run.pair.agent_name, run.run.run_index, n]
    digest = hashlib.sha256(json.dumps(key).encode("utf-8")).hexdigest()
    return digest if digest.strip("0") else "1" + digest[1:]  # an all-zero id is invalid


def nanos(iso: str | None) -> int | None:
    """An ISO 8601 time as unix nanoseconds (no zone: UTC); None when absent or unreadable."""
    if not iso:
        return None
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def run_spans(item: ReportRun, redact: Redactor) -> list[Span]:
    """The run's ``invoke_agent`` span followed by its ``execute_tool`` spans."""
    report_id = item.manifest.report_id
    run, pair = item.run, item.pair
    transcript = item.transcript()
    start, end = _run_window(item, transcript)
    trace = trace_id(report_id, item)
    root_id = span_id(report_id, item, 0)
    usage = run.token_usage or (transcript.usage if transcript else None)
    values: dict[str, Attr] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": pair.agent_name,
        "gen_ai.request.model": pair.model,
        "gen_ai.response.model": transcript.model if transcript else None,
        "gen_ai.conversation.id": transcript.session_id if transcript else None,
        "gen_ai.usage.input_tokens": usage.input if usage else None,
        "gen_ai.usage.output_tokens": usage.output if usage else None,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input if usage else None,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_input if usage else None,
        "axis.report.id": report_id,
        "axis.report.name": item.manifest.name,
        "axis.profile": item.manifest.profile,
        "axis.scenario.key": pair.scenario_key,
        "axis.scenario.name": pair.scenario_name,
        "axis.scenario.variant": pair.variant,
        "axis.agent.adapter": pair.agent,
        "axis.agent.version": run.agent_version,
        "axis.run.index": run.run_index,
        "axis.run.status": run.status,
        "axis.run.failed": run.failed,
        "axis.run.representative": run.run_index == pair.representative_run_index,
        "axis.run.duration_ms": run.duration_ms,
        "axis.run.exit_code": run.exit_code,
        "axis.cost.usd": run.total_cost_usd,
        "axis.cost.simulated": run.cost_simulated,
        "axis.score": run.score.axis_score if run.score and not run.score.withheld else None,
        "error.type": (run.error_kind or "agent_failed") if run.failed else None,
    }
    status = Status(code=STATUS_ERROR, message=redact.text(run.error or "run failed"))
    root = Span(
        trace_id=trace,
        span_id=root_id,
        name=redact.text(f"invoke_agent {pair.agent_name}"),
        start_time_unix_nano=str(start),
        end_time_unix_nano=str(end),
        attributes=attributes(redact, values),
        events=evaluation_events(
            run, redact, end, pair.pass_rates.pass_score if pair.pass_rates else 75
        ),
        status=status if run.failed else Status(),
    )
    tools = tool_spans(item, transcript, redact, trace, root_id, start) if transcript else []
    return [root, *tools]


def _run_window(item: ReportRun, transcript: Transcript | None) -> tuple[int, int]:
    """The run's start and end in unix nanos: its own times, else the transcript's, else
    the report's start; the end is never before the start."""
    run = item.run
    start = (
        nanos(run.started_at)
        or (nanos(transcript.started_at) if transcript else None)
        or nanos(item.manifest.started_at)
        or 0
    )
    end = nanos(run.ended_at) or (nanos(transcript.ended_at) if transcript else None)
    if end is None or end < start:
        end = start + max(run.duration_ms, 0) * 1_000_000
    return start, end


def tool_spans(
    item: ReportRun,
    transcript: Transcript,
    redact: Redactor,
    trace: str,
    parent: str,
    run_start: int,
) -> list[Span]:
    """One ``execute_tool`` span per tool call, in transcript order."""
    spans = []
    report_id = item.manifest.report_id
    tools = [entry for entry in transcript.entries if entry.tool is not None]
    for n, entry in enumerate(tools, start=1):
        call = entry.tool
        assert call is not None
        start = (
            nanos(call.started_at)
            or nanos(entry.timestamp)
            or run_start + entry.offset_ms * 1_000_000
        )
        end = nanos(call.ended_at)
        if end is None or end < start:
            end = start + max(call.duration_ms or 0, 0) * 1_000_000
        values: dict[str, Attr] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": _cut(_as_text(call.input)),
            "gen_ai.tool.call.result": _cut(call.output),
            "axis.tool.kind": call.kind,
            "axis.tool.input_bytes": call.input_bytes,
            "axis.tool.output_bytes": call.output_bytes,
            "error.type": "tool_error" if call.is_error else None,
        }
        spans.append(
            Span(
                trace_id=trace,
                span_id=span_id(report_id, item, n),
                parent_span_id=parent,
                name=redact.text(f"execute_tool {call.name}"),
                start_time_unix_nano=str(start),
                end_time_unix_nano=str(end),
                attributes=attributes(redact, values),
                status=Status(code=STATUS_ERROR, message="tool call failed")
                if call.is_error
                else Status(),
            )
        )
    return spans


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= TOOL_TEXT_CHARS:
        return text
    return text[:TOOL_TEXT_CHARS] + f"[… {len(text) - TOOL_TEXT_CHARS:,} more characters]"


def evaluation_events(run: RunEntry, redact: Redactor, at: int, pass_score: int) -> list[SpanEvent]:
    """``gen_ai.evaluation.result`` events: the composite (label ``pass``/``fail`` against
    the pass score), the four dimensions (0–100) and each check (0–10, label ``pass``,
    ``partial`` or ``fail``); one ``withheld`` composite when the judge failed for good."""
    score = run.score
    if score is None:
        return []
    if score.withheld:
        return [_event(redact, at, "axisScore", None, "withheld", score.withheld_reason, {})]
    events = [_dimension(redact, at, score, name, pass_score) for name in DIMENSIONS]
    for check in score.checks:
        label = "pass" if check.score == 10 else "fail" if check.score == 0 else "partial"
        extra: dict[str, Attr] = {
            "axis.check.name": check.check,
            "axis.check.kind": check.kind,
            "axis.check.weight": float(check.weight),
            "axis.evaluation.scale": 10,
        }
        name = f"check: {check.check}"
        events.append(_event(redact, at, name, check.score, label, check.rationale, extra))
    return [e for e in events if e is not None]


def _dimension(
    redact: Redactor, at: int, score: ScoreResult, name: str, pass_score: int
) -> SpanEvent | None:
    value = getattr(score, name)
    if value is None:
        return None
    label = None
    explanation = None
    if name == "axis_score":
        label = "pass" if value >= pass_score else "fail"
        explanation = " ".join(score.insights) or None
    extra: dict[str, Attr] = {"axis.evaluation.scale": 100}
    return _event(redact, at, camel(name), value, label, explanation, extra)


def _event(
    redact: Redactor,
    at: int,
    name: str,
    value: int | None,
    label: str | None,
    explanation: str | None,
    extra: dict[str, Attr],
) -> SpanEvent:
    values: dict[str, Attr] = {
        "gen_ai.evaluation.name": name,
        "gen_ai.evaluation.score.value": float(value) if value is not None else None,
        "gen_ai.evaluation.score.label": label,
        "gen_ai.evaluation.explanation": explanation or None,
        **extra,
    }
    return SpanEvent(
        time_unix_nano=str(at), name=EVALUATION_EVENT, attributes=attributes(redact, values)
    )
