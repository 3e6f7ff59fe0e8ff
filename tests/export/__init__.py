"""Tests of ``axis export`` (docs/export.md), and the real report they export.

:func:`make_report` runs ``axis run`` on a scripted NDJSON agent (a declarative adapter,
tests write it below) whose tool calls, token usage and deterministic checks are known,
so every exported span, attribute and score can be compared with the report's own files.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PLANTED = "sk-planted-4f1b9c0e7d2a6b83"
"""A secret the agent prints in a tool result; the report keeps it (no variable held it
while it ran), so only the export's own redactor can mask it."""

SECRET_VAR = "EXPORT_TEST_API_KEY"
"""The variable that holds :data:`PLANTED` while exporting."""

AGENT = f"""
import json, os, sys, time

def emit(**event):
    print(json.dumps(event), flush=True)

prompt = sys.argv[1]
if "INTERACTION AUDIT" in prompt:  # this agent is also the run's judge
    audits = [{{"id": 1, "success": 1.0, "weight": 0.9, "relevance": 1.0}},
              {{"id": 2, "success": 1.0, "weight": 1.0, "relevance": 0.8}}]
    necessity = {{"environment": {{"score": 0.9, "unnecessary_ids": []}}}}
    emit(type="result", text=json.dumps({{"audits": audits, "necessity": necessity}}))
    sys.exit(0)
emit(type="session", id="sess-" + os.environ.get("AXIS_RUN_INDEX", "1"))
emit(type="assistant", text="Looking at the folder.")
emit(type="tool_call", id="call-ls", name="Bash", input={{"command": "ls"}})
time.sleep(0.05)
emit(type="tool_result", id="call-ls", output="README.md {PLANTED}")
if "fail" in prompt:
    emit(type="tool_call", id="call-cat", name="Read", input={{"path": "missing.txt"}})
    emit(type="tool_result", id="call-cat", output="no such file", is_error=True)
    emit(type="usage", input_tokens=50, output_tokens=5)
    emit(type="error", message="gave up")
    sys.exit(1)
emit(type="tool_call", id="call-write", name="Write", input={{"path": "out.txt"}})
open("out.txt", "w").write("hi")
time.sleep(0.02)
emit(type="tool_result", id="call-write", output="written")
run = int(os.environ.get("AXIS_RUN_INDEX", "1"))
emit(type="usage", input_tokens=1000 + run, output_tokens=80 + run, cache_read_input_tokens=7)
emit(type="result", text="done")
"""

EXISTS = {"check": "out.txt exists", "run": "test -f out.txt", "weight": 0.5}
NOPE = {"check": "nope.txt exists", "run": "test -f nope.txt", "weight": 0.5}


def write_project(root: Path) -> Path:
    """A project with one NDJSON agent and two scenarios: ``ok`` (3 runs, one check passes,
    one fails) and ``broken`` (the agent fails)."""
    root.mkdir(parents=True)
    (root / "agent.py").write_text(AGENT)
    config = {
        "scenarios": "./scenarios",
        "agents": ["tooler"],
        "adapters": {
            "tooler": {
                "command": [sys.executable, str(root / "agent.py")],
                "args": ["{prompt}"],
                "output": "ndjson",
            }
        },
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    ok = {"name": "ok", "prompt": "make it", "runs": 3, "judge": [EXISTS, NOPE]}
    broken = {"name": "broken", "prompt": "fail now", "judge": [EXISTS]}
    (root / "scenarios" / "ok.json").write_text(json.dumps(ok))
    (root / "scenarios" / "broken.json").write_text(json.dumps(broken))
    return root


def make_report(root: Path) -> dict[str, Any]:
    """Run ``axis run`` in a new project at ``root``; the report's manifest as JSON."""
    write_project(root)
    done = run_axis("run", cwd=root)
    assert done.exit_code in (0, 1), done.stderr
    shown = run_axis("reports", "latest", "--json", cwd=root)
    assert shown.exit_code == 0, shown.stderr
    report: dict[str, Any] = json.loads(shown.stdout)
    return report


def report_folder(root: Path, report: dict[str, Any]) -> Path:
    return root / ".axis" / "reports" / report["reportId"]


def transcripts(root: Path, report: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """Every run's ``transcript.json`` by (scenario key, run index)."""
    found = {}
    for pair in report["results"]:
        for run in pair["runs"]:
            path = report_folder(root, report) / run["dir"] / "transcript.json"
            found[(pair["scenarioKey"], run["runIndex"])] = json.loads(path.read_text())
    return found


def run_axis(*args: str, cwd: Path) -> Any:
    """``axis ARGS`` in-process in ``cwd`` (as the ``axis`` fixture, usable by a module-scoped
    fixture): its exit code, stdout and stderr."""
    from click.testing import CliRunner

    from axis_eval.cli.main import cli

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    finally:
        os.chdir(old)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def parse_otlp(body: bytes) -> Any:
    """An OTLP/JSON body parsed by the official protobuf definitions
    (opentelemetry-proto's ``ExportTraceServiceRequest``, ``json_format.Parse``, unknown
    fields rejected). OTLP/JSON writes ids as hex where protobuf's JSON mapping reads
    base64, so the ids are turned into base64 first, as the OTLP specification tells a
    receiver to; they must be valid hex of the right length."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    data = json.loads(body)
    for resource_spans in data["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    if key in span:
                        raw = bytes.fromhex(span[key])
                        assert len(raw) == size and span[key] == span[key].lower(), span[key]
                        span[key] = base64.b64encode(raw).decode("ascii")
    message = ExportTraceServiceRequest()
    json_format.Parse(json.dumps(data), message)
    return message


class Receiver:
    """A local OTLP/HTTP receiver on 127.0.0.1: records each POST's path, headers (names
    in lower case) and body, and answers ``status`` (with ``answer`` as its body)."""

    def __init__(self, status: int = 200, answer: bytes = b"{}") -> None:
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
