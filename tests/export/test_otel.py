"""``axis_eval.export.otel``: a real report (``axis run`` on a scripted NDJSON agent) as
OpenTelemetry traces, parsed by the official OTLP protobuf definitions and compared with
the report's own manifest and transcripts; the same traces POSTed to a local receiver."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from axis_eval.errors import UsageError
from axis_eval.export import otel_send
from axis_eval.export.otel_send import export_otel
from axis_eval.runs.store import read_manifest

from . import (
    PLANTED,
    SECRET_VAR,
    Receiver,
    closed_port,
    make_report,
    parse_otlp,
    report_folder,
    transcripts,
)

pytestmark = pytest.mark.slow  # runs `axis run` once per module

DIMENSIONS = ("axisScore", "goalAchievement", "environment", "service", "agent")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("otel") / "project"
    return root, make_report(root)


def _export(made: tuple[Path, dict[str, Any]], target: str) -> Any:
    root, report = made
    folder = report_folder(root, report)
    return export_otel(folder, read_manifest(folder), target)


def _attrs(attributes: Any) -> dict[str, Any]:
    out = {}
    for kv in attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def _spans(message: Any) -> list[Any]:
    return [s for rs in message.resource_spans for ss in rs.scope_spans for s in ss.spans]


def test_the_file_parses_as_otlp_and_matches_the_report(
    made: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    root, report = made
    out = tmp_path / "traces.json"
    done = _export(made, str(out))
    message = parse_otlp(out.read_bytes())
    (resource_spans,) = message.resource_spans
    assert _attrs(resource_spans.resource.attributes)["service.name"] == "axis-eval"
    assert "service.version" in _attrs(resource_spans.resource.attributes)
    spans = _spans(message)
    runs = {(p["scenarioKey"], r["runIndex"]): (p, r) for p in report["results"] for r in p["runs"]}
    texts = transcripts(root, report)
    tool_calls = sum(1 for t in texts.values() for e in t["entries"] if e.get("tool"))
    assert tool_calls >= 7, "the scripted agent makes 2 calls a run"
    assert len(spans) == len(runs) + tool_calls == done.spans
    assert done.runs == len(runs) == len({s.trace_id for s in spans})

    agents = [s for s in spans if _attrs(s.attributes)["gen_ai.operation.name"] == "invoke_agent"]
    assert len(agents) == len(runs)
    for span in agents:
        attrs = _attrs(span.attributes)
        assert attrs["axis.report.id"] == report["reportId"]
        pair, run = runs[(attrs["axis.scenario.key"], attrs["axis.run.index"])]
        assert span.name == "invoke_agent tooler" and attrs["gen_ai.agent.name"] == "tooler"
        assert not span.parent_span_id
        usage = run["tokenUsage"]
        assert attrs["gen_ai.usage.input_tokens"] == usage["input"]
        assert attrs["gen_ai.usage.output_tokens"] == usage["output"]
        assert attrs["gen_ai.usage.cache_read.input_tokens"] == usage["cacheReadInput"]
        transcript = texts[(pair["scenarioKey"], run["runIndex"])]
        assert attrs["gen_ai.conversation.id"] == transcript["sessionId"]
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 1_700_000_000 * 10**9
        # the failed run is an error span; the others are unset
        assert span.status.code == (2 if run["failed"] else 0)
        if run["failed"]:
            assert span.status.message == run["error"] and "error.type" in attrs

        # tools: children of this span, in order, with the transcript's names and ids
        children = [s for s in spans if s.parent_span_id == span.span_id]
        calls = [e["tool"] for e in transcript["entries"] if e.get("tool")]
        assert [s.trace_id for s in children] == [span.trace_id] * len(calls)
        got = [
            (_attrs(s.attributes)["gen_ai.tool.name"], _attrs(s.attributes)["gen_ai.tool.call.id"])
            for s in children
        ]
        assert got == [(c["name"], c["id"]) for c in calls]
        for child, call in zip(children, calls, strict=True):
            assert _attrs(child.attributes)["gen_ai.operation.name"] == "execute_tool"
            assert child.name == f"execute_tool {call['name']}"
            assert child.status.code == (2 if call["isError"] else 0)
            took = (child.end_time_unix_nano - child.start_time_unix_nano) // 1_000_000
            assert abs(took - call["durationMs"]) <= 1

        # scores: one evaluation event per dimension and per check, equal to the report's
        score = run.get("score")
        events = {
            _attrs(e.attributes)["gen_ai.evaluation.name"]: _attrs(e.attributes)
            for e in span.events
        }
        assert all(e.name == "gen_ai.evaluation.result" for e in span.events)
        if score is None:
            assert events == {}
            continue
        assert not score["withheld"], score["withheldReason"]
        for name in DIMENSIONS:
            assert events[name]["gen_ai.evaluation.score.value"] == score[name]
        assert events["axisScore"]["gen_ai.evaluation.score.label"] == (
            "pass" if score["axisScore"] >= pair["passRates"]["passScore"] else "fail"
        )
        for check in score["checks"]:
            event = events[f"check: {check['check']}"]
            assert event["gen_ai.evaluation.score.value"] == check["score"]
            assert event["gen_ai.evaluation.explanation"] == check["rationale"]
            assert event["gen_ai.evaluation.score.label"] == ("pass" if check["score"] else "fail")
        assert len(events) == len(DIMENSIONS) + len(score["checks"])
    assert done.events == sum(len(s.events) for s in spans) > 0


def test_a_re_export_is_byte_identical(made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _export(made, str(tmp_path / "a.json"))
    _export(made, str(tmp_path / "b.json"))
    first = (tmp_path / "a.json").read_bytes()
    assert first == (tmp_path / "b.json").read_bytes()
    ids = [s["spanId"] for s in json.loads(first)["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert len(set(ids)) == len(ids), "span ids are unique"


def test_a_secret_of_the_environment_is_masked(
    made: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SECRET_VAR, raising=False)
    _export(made, str(tmp_path / "plain.json"))
    assert PLANTED in (tmp_path / "plain.json").read_text(), "the report kept it"
    monkeypatch.setenv(SECRET_VAR, PLANTED)
    _export(made, str(tmp_path / "masked.json"))
    text = (tmp_path / "masked.json").read_text()
    assert PLANTED not in text and "README.md [REDACTED]" in text


def test_the_receiver_gets_batches_that_parse(
    made: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(otel_send, "BATCH_RUNS", 3)
    _export(made, str(tmp_path / "file.json"))
    from_file = _spans(parse_otlp((tmp_path / "file.json").read_bytes()))
    with Receiver() as receiver:
        done = _export(made, receiver.url)
    assert done.requests == 2 == len(receiver.posts), "4 runs in batches of 3"
    assert done.target == receiver.url + "/v1/traces"
    spans = []
    for path, headers, body in receiver.posts:
        assert path == "/v1/traces"
        assert headers["content-type"] == "application/json"
        spans += _spans(parse_otlp(body))
    assert [s.SerializeToString() for s in spans] == [s.SerializeToString() for s in from_file]


def test_a_url_with_a_path_is_used_as_it_is(made: tuple[Path, dict[str, Any]]) -> None:
    with Receiver() as receiver:
        _export(made, receiver.url + "/otlp/traces")
    assert [p for p, _, _ in receiver.posts] == ["/otlp/traces"]


def test_an_endpoint_error_says_its_status_and_body(made: tuple[Path, dict[str, Any]]) -> None:
    answer = b'{"message": "bad span payload"}'
    with Receiver(status=400, answer=answer) as receiver, pytest.raises(UsageError) as caught:
        _export(made, receiver.url)
    text = caught.value.render()
    assert receiver.url in text and "HTTP 400" in text and "bad span payload" in text


def test_an_unreachable_endpoint_names_the_url(made: tuple[Path, dict[str, Any]]) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(UsageError) as caught:
        _export(made, url)
    assert f"--otel {url}/v1/traces: cannot reach the endpoint" in caught.value.render()
    assert caught.value.exit_code == 2


def test_another_scheme_is_refused(made: tuple[Path, dict[str, Any]]) -> None:
    with pytest.raises(UsageError, match="not an http"):
        _export(made, "grpc://127.0.0.1:4317")


def test_otlp_headers_and_url_credentials_are_sent(
    made: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=ax%20eval, api-key=k1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "api-key=k2")
    with Receiver() as receiver:
        host = receiver.url.removeprefix("http://")
        done = _export(made, f"http://bob:s3cr%40t-pass@{host}")
    ((_, headers, _),) = receiver.posts
    assert headers["x-team"] == "ax eval" and headers["api-key"] == "k2", "traces wins"
    assert headers["authorization"] == "Basic " + base64.b64encode(b"bob:s3cr@t-pass").decode()
    assert "s3cr" not in done.target and done.target == receiver.url + "/v1/traces"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://", "it has no host"),
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:70000", "Port out of range"),
    ],
)
def test_an_invalid_url_is_refused(
    made: tuple[Path, dict[str, Any]], url: str, problem: str
) -> None:
    with pytest.raises(UsageError) as caught:
        _export(made, url)
    assert f"--otel {url}: not a valid URL ({problem}" in caught.value.render()
