"""As HTTP(S) proxy the server refuses every outside connection and records it."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest

from axis_model_server import ScriptedModelServer


def _raw(server: ScriptedModelServer, text: str) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(text.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


def test_connect_is_refused_and_recorded(server: ScriptedModelServer) -> None:
    reply = _raw(
        server,
        "CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n"
        "User-Agent: claude-cli/2.1\r\n\r\n",
    )
    assert reply.startswith(b"HTTP/1.1 403")
    [attempt] = server.connect_attempts
    assert (attempt.method, attempt.target, attempt.host, attempt.port) == (
        "CONNECT",
        "api.anthropic.com:443",
        "api.anthropic.com",
        443,
    )
    assert attempt.headers == {"user-agent": "claude-cli/2.1"}
    assert server.requests == []


def test_https_proxy_users_are_trapped(server: ScriptedModelServer) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"https": server.url}))
    with pytest.raises(urllib.error.URLError) as caught:
        opener.open("https://chatgpt.com/backend-api/x", timeout=5).close()
    assert "403" in str(caught.value.reason)
    assert [(a.host, a.port) for a in server.connect_attempts] == [("chatgpt.com", 443)]


def test_absolute_url_requests_are_trapped(server: ScriptedModelServer) -> None:
    reply = _raw(server, "GET http://example.com/x?y=1 HTTP/1.1\r\nHost: example.com\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 403")
    [attempt] = server.connect_attempts
    assert (attempt.method, attempt.target, attempt.host, attempt.port) == (
        "GET",
        "http://example.com/x?y=1",
        "example.com",
        80,
    )


def test_absolute_urls_to_the_server_itself_are_served(server: ScriptedModelServer) -> None:
    # Some agents (Qwen Code) send even loopback traffic through the proxy.
    reply = _raw(
        server,
        f"GET {server.url}/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    assert reply.startswith(b"HTTP/1.1 200")
    assert b"scripted-model" in reply
    assert server.connect_attempts == []
    assert [r.path for r in server.requests] == ["/v1/models"]
