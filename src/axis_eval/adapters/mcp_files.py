"""MCP servers from the config and scenario, in each agent CLI's own config format.

Files go into the job's agent config folder under the per-job HOME, never into the
workspace. The host's MCP configuration never reaches an agent: HOME and every agent
config folder are per job, and Claude Code also gets ``--strict-mcp-config``.

``${VAR}`` in the values of an http server's ``headers`` and a stdio server's ``env`` is
replaced by the variable from the run's environment (:func:`interpolate_servers`, applied
when a job hands its servers to the adapter); ``$${VAR}`` is a literal ``${VAR}``. URLs,
commands and arguments are passed verbatim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from axis_eval.config.actions import McpHttpServer, McpServer, McpStdioServer
from axis_eval.errors import PreflightError
from axis_eval.files import atomic_write_text

__all__ = [
    "McpVariableMissing",
    "claude_mcp_config",
    "codex_mcp_toml",
    "gemini_mcp_servers",
    "interpolate_servers",
    "interpolated_values",
    "missing_message",
    "missing_variables",
    "toml_key",
    "toml_string",
    "write_claude_mcp",
]


_VARIABLE = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``${NAME}``, or ``$${NAME}`` (the escape: a literal ``${NAME}``)."""


class McpVariableMissing(PreflightError):
    """A ``${VAR}`` in an MCP server's header or env value names an unset variable."""


def _fields(server: McpServer) -> tuple[str, dict[str, str]]:
    if isinstance(server, McpHttpServer):
        return "headers", server.headers
    return "env", server.env


def _substitute(value: str, env: Mapping[str, str], missing: list[str]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(0)[1:]
        name = match.group(2)
        found = env.get(name)
        if not found:
            missing.append(name)
            return match.group(0)
        return found

    return _VARIABLE.sub(one, value)


def missing_variables(
    servers: Mapping[str, McpServer], env: Mapping[str, str]
) -> list[tuple[str, str, str, str]]:
    """``(server, "headers" or "env", key, variable)`` for each ``${VAR}`` unset or empty."""
    out: list[tuple[str, str, str, str]] = []
    for name, server in servers.items():
        field, values = _fields(server)
        for key, value in values.items():
            missing: list[str] = []
            _substitute(value, env, missing)
            out.extend((name, field, key, var) for var in dict.fromkeys(missing))
    return out


def missing_message(found: list[tuple[str, str, str, str]]) -> str:
    """One sentence per missing variable, naming the server and the header (or env key)."""
    parts = [
        f"MCP server {server!r} {'header' if field == 'headers' else 'env'} {key!r} uses "
        f"${{{var}}}, which is not set"
        for server, field, key, var in found
    ]
    return "; ".join(parts)


def interpolate_servers(
    servers: Mapping[str, McpServer], env: Mapping[str, str], *, strict: bool = True
) -> dict[str, McpServer]:
    """``servers`` with ``${VAR}`` in header and env values taken from ``env``.

    Raises:
        McpVariableMissing: (``strict``) a variable is unset or empty; otherwise it is left
            as written.
    """
    out: dict[str, McpServer] = {}
    problems: list[tuple[str, str, str, str]] = []
    for name, server in servers.items():
        field, values = _fields(server)
        if not any("${" in v for v in values.values()):
            out[name] = server
            continue
        done: dict[str, str] = {}
        for key, value in values.items():
            missing: list[str] = []
            done[key] = _substitute(value, env, missing)
            problems.extend((name, field, key, var) for var in dict.fromkeys(missing))
        out[name] = server.model_copy(update={field: done})
    if problems and strict:
        raise McpVariableMissing(
            missing_message(problems),
            hint=f"export {problems[0][3]}=… before `axis run` (or write $${{NAME}} for a "
            "literal ${NAME})",
        )
    return out


def interpolated_values(servers: Mapping[str, McpServer], env: Mapping[str, str]) -> list[str]:
    """What ``${VAR}`` filled in (for the redactor): each header or env value that used a
    set variable, as filled in, and each such variable's own value."""
    values: list[str] = []
    for server in servers.values():
        for value in _fields(server)[1].values():
            used = [
                env[m.group(2)]
                for m in _VARIABLE.finditer(value)
                if not m.group(1) and env.get(m.group(2))
            ]
            if used:
                values.append(_substitute(value, env, []))
                values.extend(used)
    return values


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
