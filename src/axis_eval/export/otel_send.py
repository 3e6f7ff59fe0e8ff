"""``axis export --otel``: a report's traces to an OTLP/JSON file or an OTLP/HTTP endpoint.

A file gets one ``ExportTraceServiceRequest`` written as the runs are read (one run's
spans in memory at a time) and renamed into place atomically. An ``http(s)`` URL gets
``POST`` requests of at most :data:`BATCH_RUNS` runs each (``Content-Type:
application/json``), to ``/v1/traces`` when the URL has no path. A bad URL, an
unreachable endpoint or a non-2xx answer is a :class:`~axis_eval.errors.UsageError`
naming the URL (exit 2).
"""

from __future__ import annotations

import base64
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from axis_eval.errors import UsageError
from axis_eval.export.otel import SCOPE, SEMCONV_SCHEMA, resource, run_spans
from axis_eval.export.otel_models import (
    ExportTraceServiceRequest,
    ResourceSpans,
    ScopeSpans,
    Span,
)
from axis_eval.export.report_runs import iter_runs
from axis_eval.files import atomic_write_chunks
from axis_eval.redact import Redactor
from axis_eval.report.models import ReportManifest

BATCH_RUNS = 100
"""Runs per OTLP/HTTP request."""

BODY_HEAD = 300
"""Characters of an endpoint's error answer quoted in the message."""


@dataclass(frozen=True)
class OtelExport:
    """What an export wrote: runs (traces), spans, evaluation events, requests, where."""

    runs: int
    spans: int
    events: int
    target: str
    requests: int = 0
    """HTTP requests sent (0 for a file)."""


def export_otel(
    folder: Path,
    manifest: ReportManifest,
    target: str,
    *,
    redactor: Redactor | None = None,
    timeout_s: float = 30.0,
) -> OtelExport:
    """Export the report in ``folder`` to ``target``: an ``http(s)://`` URL or a file path.

    Raises:
        UsageError: the URL is invalid, the endpoint unreachable or it answered non-2xx;
            the file cannot be written.
    """
    redact = redactor or Redactor.from_env(os.environ, os.environ)
    scheme = target.partition("://")[0].lower() if "://" in target else ""
    if scheme in ("http", "https"):
        url, headers = _endpoint(target, redact)
        return _post_all(folder, manifest, url, headers, redact, timeout_s)
    if "://" in target:
        raise UsageError(
            f"--otel {redact.text(target)}: not an http(s) URL or a file path",
            hint="give an OTLP/HTTP endpoint (http://host:4318) or a file (traces.json)",
        )
    return _write_file(folder, manifest, Path(target), redact)


def _endpoint(target: str, redact: Redactor) -> tuple[str, dict[str, str]]:
    """The traces URL (credentials taken out) and the request headers: JSON, the
    ``OTEL_EXPORTER_OTLP_HEADERS`` / ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` ones, and basic
    authentication from ``user:password@`` in the URL."""
    try:
        parts = urlsplit(target)
        port = parts.port
        problem = "" if parts.hostname else "it has no host"
    except ValueError as exc:
        parts, port, problem = urlsplit(""), None, str(exc)
    if problem:
        raise UsageError(
            f"--otel {redact.text(target)}: not a valid URL ({problem})",
            hint="e.g. http://127.0.0.1:4318 or https://otlp.example.com/v1/traces",
        )
    headers = {"Content-Type": "application/json"}
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        headers.update(otlp_headers(os.environ.get(name, "")))
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if port is not None:
            netloc += f":{port}"
        parts = parts._replace(netloc=netloc)
    return traces_url(urlunsplit(parts)), headers


def otlp_headers(value: str) -> dict[str, str]:
    """``key1=value1,key2=value2`` (values percent-encoded), as the OpenTelemetry exporters
    read ``OTEL_EXPORTER_OTLP_HEADERS``; entries without ``=`` are ignored."""
    found = {}
    for item in value.split(","):
        key, eq, raw = item.partition("=")
        if eq and key.strip():
            found[unquote(key.strip())] = unquote(raw.strip())
    return found


def traces_url(url: str) -> str:
    """``url`` with ``/v1/traces`` as its path when it has none."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


def _spans(folder: Path, manifest: ReportManifest, redact: Redactor) -> Iterator[list[Span]]:
    for item in iter_runs(folder, manifest):
        yield run_spans(item, redact)


def _request(spans: list[Span]) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource(),
                scope_spans=[ScopeSpans(scope=SCOPE, spans=spans, schema_url=SEMCONV_SCHEMA)],
            )
        ]
    )


def _json(model: ExportTraceServiceRequest | Span) -> bytes:
    return model.model_dump_json(exclude_none=True).encode("utf-8")


def _write_file(folder: Path, manifest: ReportManifest, out: Path, redact: Redactor) -> OtelExport:
    counts = {"runs": 0, "spans": 0, "events": 0}
    head, _, tail = _json(_request([])).partition(b'"spans":[]')

    def chunks() -> Iterator[bytes]:
        yield head + b'"spans":['
        first = True
        for spans in _spans(folder, manifest, redact):
            counts["runs"] += 1
            for span in spans:
                counts["spans"] += 1
                counts["events"] += len(span.events)
                yield (b"" if first else b",") + _json(span)
                first = False
        yield b"]" + tail + b"\n"

    try:
        atomic_write_chunks(out, chunks(), mode=0o644)
    except OSError as exc:
        raise UsageError(f"--otel {out}: cannot write the file: {exc.strerror or exc}") from exc
    return OtelExport(target=str(out), **counts)


def _post_all(
    folder: Path,
    manifest: ReportManifest,
    url: str,
    headers: dict[str, str],
    redact: Redactor,
    timeout_s: float,
) -> OtelExport:
    shown = redact.text(url)
    runs = spans_total = events = requests = 0
    batch: list[Span] = []
    batch_runs = 0
    for spans in _spans(folder, manifest, redact):
        runs += 1
        batch_runs += 1
        batch.extend(spans)
        spans_total += len(spans)
        events += sum(len(s.events) for s in spans)
        if batch_runs == BATCH_RUNS:
            _post(url, shown, headers, _json(_request(batch)), timeout_s, redact)
            requests += 1
            batch, batch_runs = [], 0
    if batch_runs or requests == 0:
        _post(url, shown, headers, _json(_request(batch)), timeout_s, redact)
        requests += 1
    return OtelExport(runs=runs, spans=spans_total, events=events, target=shown, requests=requests)


def _post(
    url: str,
    shown: str,
    headers: dict[str, str],
    body: bytes,
    timeout_s: float,
    redact: Redactor,
) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            answer.read()
    except urllib.error.HTTPError as exc:
        head = exc.read(BODY_HEAD * 4).decode("utf-8", "replace")[:BODY_HEAD].strip()
        raise UsageError(
            f"--otel {shown}: the endpoint answered HTTP {exc.code} {exc.reason}"
            + (f": {redact.text(head)}" if head else ""),
            hint="check the URL is an OTLP/HTTP traces endpoint that accepts JSON",
        ) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UsageError(
            f"--otel {shown}: cannot reach the endpoint ({redact.text(str(reason))})",
            hint="is the collector running? OTLP/HTTP listens on port 4318 by default",
        ) from exc
