"""The OTLP/JSON shapes ``axis export --otel`` writes: an ``ExportTraceServiceRequest``.

Field names and encodings follow the OTLP specification's JSON mapping
(opentelemetry-proto ``collector/trace/v1``): camelCase keys, trace and span ids as
lowercase hex (not base64), 64-bit integers (times in unix nanoseconds, ``intValue``) as
decimal strings, enums (span kind, status code) as their integer values.
"""

from pydantic import Field

from axis_eval._types import OutputModel
from axis_eval._util.defaults import empty_list

SPAN_KIND_INTERNAL = 1
"""``SPAN_KIND_INTERNAL``: the runs are recorded after the fact, inside one process."""

STATUS_UNSET = 0
STATUS_ERROR = 2


class AnyValue(OutputModel):
    """One attribute value: exactly one of the fields is set."""

    string_value: str | None = None
    bool_value: bool | None = None
    int_value: str | None = None
    """An int64 as a decimal string (OTLP/JSON)."""
    double_value: float | None = None


class KeyValue(OutputModel):
    """An attribute."""

    key: str
    value: AnyValue


class Status(OutputModel):
    """A span's status: ``code`` 0 unset, 1 ok, 2 error."""

    code: int = STATUS_UNSET
    message: str | None = None


class SpanEvent(OutputModel):
    """A timed event of a span (the GenAI ``gen_ai.evaluation.result`` events)."""

    time_unix_nano: str
    name: str
    attributes: list[KeyValue] = Field(default_factory=empty_list)


class Span(OutputModel):
    """One span: ``invoke_agent`` for a run, ``execute_tool`` for each of its tool calls."""

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """16 lowercase hex digits."""
    parent_span_id: str | None = None
    name: str
    kind: int = SPAN_KIND_INTERNAL
    start_time_unix_nano: str
    end_time_unix_nano: str
    attributes: list[KeyValue] = Field(default_factory=empty_list)
    events: list[SpanEvent] = Field(default_factory=empty_list)
    status: Status = Field(default_factory=Status)


class InstrumentationScope(OutputModel):
    """What produced the spans: axis-eval's exporter."""

    name: str
    version: str | None = None


class ScopeSpans(OutputModel):
    """The spans of one instrumentation scope."""

    scope: InstrumentationScope
    spans: list[Span] = Field(default_factory=empty_list)
    schema_url: str | None = None


class Resource(OutputModel):
    """The entity the spans describe: ``service.name=axis-eval`` and its version."""

    attributes: list[KeyValue] = Field(default_factory=empty_list)


class ResourceSpans(OutputModel):
    """The spans of one resource."""

    resource: Resource
    scope_spans: list[ScopeSpans] = Field(default_factory=empty_list)
    schema_url: str | None = None


class ExportTraceServiceRequest(OutputModel):
    """The body of an OTLP/HTTP ``POST /v1/traces`` and the content of an OTLP/JSON file."""

    resource_spans: list[ResourceSpans] = Field(default_factory=empty_list)
