"""MCP servers from the config and scenario, in each agent CLI's own config format.

Files go into the job's agent config folder under the per-job HOME, never into the
workspace. The host's MCP configuration never reaches an agent: HOME and every agent
config folder are per job, and Claude Code also gets ``--strict-mcp-config``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from axis_eval.config.actions import McpHttpServer, McpServer, McpStdioServer
from axis_eval.files import atomic_write_text

__all__ = [
    "claude_mcp_config",
    "codex_mcp_toml",
    "gemini_mcp_servers",
    "toml_key",
    "toml_string",
    "write_claude_mcp",
]


def claude_mcp_config(servers: Mapping[str, McpServer]) -> dict[str, Any]:
    """Claude Code's ``--mcp-config`` file: ``{"mcpServers": {name: …}}``."""
    out: dict[str, Any] = {}
    for name, server in servers.items():
        if isinstance(server, McpStdioServer):
            entry: dict[str, Any] = {"type": "stdio", "command": server.command}
            if server.args:
                entry["args"] = list(server.args)
            if server.env:
                entry["env"] = dict(server.env)
        else:
            entry = {"type": "http", "url": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        out[name] = entry
    return {"mcpServers": out}


def write_claude_mcp(folder: Path, servers: Mapping[str, McpServer]) -> Path | None:
    """Write ``<CLAUDE_CONFIG_DIR>/mcp.json`` (mode 0600); None when there are no servers."""
    if not servers:
        return None
    path = folder / "mcp.json"
    atomic_write_text(path, json.dumps(claude_mcp_config(servers), indent=2) + "\n")
    path.chmod(0o600)
    return path


def gemini_mcp_servers(servers: Mapping[str, McpServer]) -> dict[str, Any]:
    """Gemini CLI's ``settings.json`` ``mcpServers`` (streamable HTTP as ``httpUrl``)."""
    out: dict[str, Any] = {}
    for name, server in servers.items():
        if isinstance(server, McpStdioServer):
            entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            if server.env:
                entry["env"] = dict(server.env)
        else:
            entry = {"httpUrl": server.url}
            if server.headers:
                entry["headers"] = dict(server.headers)
        out[name] = entry
    return out


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}


def toml_string(value: str) -> str:
    """A TOML basic string, with control characters escaped."""
    out = []
    for char in value:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A TOML key: bare when it can be, else quoted."""
    return key if _BARE_KEY.match(key) else toml_string(key)


def _toml_table(header: str, values: Mapping[str, str]) -> list[str]:
    lines = ["", f"[{header}]"]
    lines += [f"{toml_key(k)} = {toml_string(v)}" for k, v in values.items()]
    return lines


def codex_mcp_toml(servers: Mapping[str, McpServer]) -> str:
    """Codex ``config.toml`` tables: ``[mcp_servers.<name>]`` with env/headers sub-tables."""
    lines: list[str] = []
    for name, server in servers.items():
        header = f"mcp_servers.{toml_key(name)}"
        lines += ["", f"[{header}]"]
        if isinstance(server, McpStdioServer):
            lines.append(f"command = {toml_string(server.command)}")
            args = ", ".join(toml_string(a) for a in server.args)
            lines.append(f"args = [{args}]")
            if server.env:
                lines += _toml_table(f"{header}.env", server.env)
        else:
            assert isinstance(server, McpHttpServer)
            lines.append(f"url = {toml_string(server.url)}")
            if server.headers:
                lines += _toml_table(f"{header}.http_headers", server.headers)
    return "\n".join(lines) + ("\n" if lines else "")
