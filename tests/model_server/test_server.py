"""The HTTP server itself: routes, errors, lifecycle, the log, concurrency."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
from pathlib import Path

import pytest

from axis_model_server import ScriptedModelServer, Tape, load_tape

from ._client import DRIVERS, post, request, shell_tool
from .helpers import PROMPT

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tapes" / "hello.yaml"


def test_unknown_paths_are_404_json(server: ScriptedModelServer) -> None:
    for method, path in [("POST", "/v1/unknown"), ("GET", "/nothing"), ("PUT", "/v1/messages")]:
        resp = request(server.url, method, path, {"a": 1})
        assert resp.status == 404
        assert resp.headers["content-type"] == "application/json"
        assert resp.json()["error"]["type"] == "not_found_error"
    assert [(r.status, r.protocol) for r in server.requests] == [(404, None)] * 3


def test_model_lists(server: ScriptedModelServer) -> None:
    openai = request(server.url, "GET", "/v1/models").json()
    assert [m["id"] for m in openai["data"]] == ["scripted-model"]
    assert openai["data"][0]["type"] == "model"  # Anthropic's shape too
    google = request(server.url, "GET", "/v1beta/models").json()
    assert google["models"][0]["name"] == "models/scripted-model"
    one = request(server.url, "GET", "/v1/models/claude-x").json()
    assert one["id"] == "claude-x"


def test_bad_json_is_a_400_and_logged(server: ScriptedModelServer) -> None:
    resp = request(server.url, "POST", "/v1/messages", raw=b"{not json")
    assert resp.status == 400
    assert "not valid JSON" in resp.json()["error"]["message"]
    resp = request(server.url, "POST", "/v1/chat/completions", raw=b"[1, 2]")
    assert resp.status == 400
    assert [r.status for r in server.requests] == [400, 400]
    assert server.requests[0].error is not None
    assert server.usage_totals().requests == 0


def test_gzip_bodies_and_keep_alive(server: ScriptedModelServer) -> None:
    body = DRIVERS["chat"](False).minimal(PROMPT, [shell_tool("bash")])
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for _ in range(2):  # two requests on one persistent connection
            conn.request(
                "POST",
                "/v1/chat/completions",
                body=gzip.compress(json.dumps(body).encode()),
                headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
            )
            resp = conn.getresponse()
            data = json.loads(resp.read())
            assert data["choices"][0]["finish_reason"] == "tool_calls"
    finally:
        conn.close()
    assert len(server.requests) == 2


def test_concurrent_requests(server: ScriptedModelServer) -> None:
    driver = DRIVERS["anthropic"](True)
    body = driver.minimal(PROMPT, [shell_tool("Bash")])
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(driver.send(server.url, body).calls[0].name)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert errors == []
    assert results == ["Bash"] * 16
    assert len(server.requests) == 16


def test_lifecycle_and_log(tape: Tape, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    seen: list[object] = []
    server = ScriptedModelServer(tape, log_path=log, on_record=seen.append)
    with pytest.raises(RuntimeError):
        _ = server.port
    with server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        post(server.url, "/v1/messages", {"messages": [{"role": "user", "content": PROMPT}]})
        assert len(server.requests) == 1
        copy = server.requests
        copy.clear()
        assert len(server.requests) == 1, "requests is a copy"
        server.reset_log()
        assert server.requests == [] and server.connect_attempts == []
        port = server.port
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["kind"], line["conversation"]) for line in lines] == [("request", "hello")]
    assert len(seen) == 1


def test_stop_closes_idle_keep_alive_connections(tape: Tape) -> None:
    server = ScriptedModelServer(tape).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", "/v1/models")
        conn.getresponse().read()
        server.stop()  # must not hang on the open connection
    finally:
        conn.close()
        server.stop()


def test_tape_from_a_path_and_loopback_only() -> None:
    with ScriptedModelServer(EXAMPLE) as server:
        assert server.tape == load_tape(EXAMPLE)
    with pytest.raises(ValueError, match="loopback"):
        ScriptedModelServer(load_tape(EXAMPLE), host="0.0.0.0")
    with pytest.raises(ValueError, match="loopback"):
        ScriptedModelServer(load_tape(EXAMPLE), host="example.com")
