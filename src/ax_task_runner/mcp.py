"""A Workspace's MCP servers, written for Claude Code, Codex and Gemini CLI under HOME.

An extension: upstream writes no MCP configuration. The files go under the command's
HOME (never into the workspace) and are merged into what is there:

* Claude Code: ``$CLAUDE_CONFIG_DIR/.claude.json`` or ``~/.claude.json``, ``mcpServers``
  (user scope, read on every start);
* Codex: ``$CODEX_HOME/config.toml`` or ``~/.codex/config.toml``, one
  ``[mcp_servers.<name>]`` table per server not already declared;
* Gemini CLI: ``$GEMINI_CLI_HOME/.gemini/settings.json`` or ``~/.gemini/settings.json``,
  ``mcpServers``.

The formats come from :mod:`axis_eval.adapters.mcp_files` (imported on first use).
Registries are not resolved; servers listed inline under a registry are included.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ax_task_runner.files import write_atomic
from ax_task_runner.logs import event
from ax_task_runner.spec import McpServer, Workspace

__all__ = ["collect_servers", "config_paths", "write_mcp_configs"]

log = logging.getLogger(__name__)


def collect_servers(workspace: Workspace) -> list[McpServer]:
    """The workspace's servers: ``mcp.servers`` then those inline in ``mcp.registries``."""
    mcp = workspace.spec.mcp
    if mcp is None:
        return []
    servers = list(mcp.servers)
    for registry in mcp.registries:
        servers += registry.servers
    return servers


def config_paths(env: Mapping[str, str]) -> dict[str, Path]:
    """Where each agent's file goes, from the command's environment (HOME and overrides)."""
    home = Path(env.get("HOME") or "/root")
    claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
    codex = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    gemini = Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home
    return {
        "claude": claude / ".claude.json",
        "codex": codex / "config.toml",
        "gemini": gemini / ".gemini" / "settings.json",
    }


def _name(server: McpServer) -> str:
    if server.name.strip():
        return server.name.strip()
    source = server.endpoint or server.command
    return re.sub(r"[^A-Za-z0-9_-]+", "-", source.rsplit("/", 1)[-1]).strip("-") or "mcp"


def _convert(servers: list[McpServer]) -> dict[str, Any]:
    """AX servers → axis_eval's McpServer models (stdio or http), first name wins."""
    from axis_eval.config.actions import McpHttpServer, McpStdioServer

    out: dict[str, Any] = {}
    for server in servers:
        name = _name(server)
        if name in out:
            event(log, logging.WARNING, "duplicate MCP server name; first one kept", name=name)
            continue
        if server.endpoint:
            if server.command:
                event(
                    log,
                    logging.WARNING,
                    "MCP server has an endpoint and a command; using the endpoint",
                    name=name,
                )
            out[name] = McpHttpServer(type="http", url=server.endpoint)
        elif server.command:
            out[name] = McpStdioServer(type="stdio", command=server.command, args=server.args)
        else:
            event(
                log,
                logging.WARNING,
                "MCP server has neither endpoint nor command; skipped",
                name=name,
            )
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    """The file's object, {} when absent, None when it exists but is not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _merge_json(path: Path, entries: dict[str, Any]) -> bool:
    data = _read_json(path)
    if data is None:
        event(
            log, logging.WARNING, "existing file is not a JSON object; left alone", path=str(path)
        )
        return False
    current = data.get("mcpServers")
    merged = dict(current) if isinstance(current, dict) else {}
    merged.update(entries)
    data["mcpServers"] = merged
    write_atomic(path, json.dumps(data, indent=2) + "\n", mode=0o600)
    return True


def _merge_toml(path: Path, servers: dict[str, Any]) -> bool:
    from axis_eval.adapters.mcp_files import codex_mcp_toml, toml_key

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    fresh = {
        name: server
        for name, server in servers.items()
        if not re.search(rf"^\s*\[mcp_servers\.{re.escape(toml_key(name))}\]", text, re.M)
    }
    if not fresh:
        return False
    addition = codex_mcp_toml(fresh)
    joined = text + ("\n" if text and not text.endswith("\n") else "") + addition
    write_atomic(path, joined, mode=0o600)
    return True


def write_mcp_configs(servers: list[McpServer], env: Mapping[str, str]) -> list[Path]:
    """Merge ``servers`` into the three agents' config files; the files written.

    Blocking (file I/O and a first import of axis_eval): run it in a thread.
    """
    if not servers:
        return []
    from axis_eval.adapters.mcp_files import claude_mcp_config, gemini_mcp_servers

    converted = _convert(servers)
    if not converted:
        return []
    paths = config_paths(env)
    written: list[Path] = []
    if _merge_json(paths["claude"], claude_mcp_config(converted)["mcpServers"]):
        written.append(paths["claude"])
    if _merge_toml(paths["codex"], converted):
        written.append(paths["codex"])
    if _merge_json(paths["gemini"], gemini_mcp_servers(converted)):
        written.append(paths["gemini"])
    return written
