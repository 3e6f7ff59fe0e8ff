"""HTTP for the test client: one request per connection, and a strict SSE reader."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Response:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=10)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=sent)
        resp = conn.getresponse()
        payload = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
    finally:
        conn.close()


def post(url: str, path: str, body: Any, headers: dict[str, str] | None = None) -> Response:
    return request(url, "POST", path, body, headers)


@dataclass
class Event:
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def sse_events(body: bytes) -> list[Event]:
    """Parse a text/event-stream body strictly: every frame ends with a blank line."""
    text = body.decode()
    assert text.endswith("\n\n"), "an SSE stream ends with a blank line"
    events = []
    for block in text.split("\n\n")[:-1]:
        name = None
        data: list[str] = []
        for line in block.split("\n"):
            assert line, "no stray blank lines inside a frame"
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        assert data, f"frame without data: {block!r}"
        events.append(Event(name, "\n".join(data)))
    return events
