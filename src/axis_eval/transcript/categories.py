"""Which dimension a tool interaction counts in: environment, service or agent.

Real agents name their tools differently (Claude ``Bash``, Gemini ``run_shell_command``,
Codex ``command_execution``/``exec_command``/``apply_patch``, ACP calls titled by what they do
and typed by ``kind``, ``mcp__server__tool`` …), so a name is first normalized to a canonical
lowercase name, then classified:

1. agent tools (tool discovery, task management, planning, asking the user, skills) → agent;
2. environment tools (shell, files, version control, package managers, build and test) →
   environment; refined: on an agent-internal path (``.claude/`` …) → agent; a shell
   command that reaches the network (curl, wget, an http URL) → environment and service;
3. a call whose name is not in those lists uses its ACP ``kind`` the same way
   (``execute``/``read``/``edit``/``modify``/``add``/``search``/``delete``/``move`` →
   environment, ``think``/``switch_mode`` → agent, ``fetch`` → service), as AXIS's
   ``categorize.ts`` does;
4. anything else → service (external APIs, MCP tools, web fetches, custom services).

MCP tools are services unless their server is a filesystem, shell or git server.
"""

from __future__ import annotations

import re
from typing import Any

from axis_eval._types import Category
from axis_eval._util.json_text import context_text

AGENT_TOOLS = frozenset(
    {
        # tool discovery
        "toolsearch", "tool_search", "listtoolsets", "list_tools", "listmcpresourcestool",
        "list_mcp_resources",
        # task management and sub-agents
        "task", "agent", "taskcreate", "taskupdate", "taskget", "tasklist", "taskoutput",
        "taskstop", "todoread", "todowrite", "todo_read", "todo_write", "write_todos",
        "update_plan", "todo_list",
        # planning
        "enterplanmode", "exitplanmode", "enter_plan_mode", "exit_plan_mode", "think",
        "switch_mode",
        # user interaction
        "askuserquestion", "askfollowupquestion", "ask_user_question", "ask_followup_question",
        # skills and memory
        "skill", "slashcommand", "save_memory",
    }
)  # fmt: skip
"""Self-organisation and metacognition (canonical, lowercase names)."""

SHELL_TOOLS = frozenset(
    {"bash", "shell", "terminal", "exec", "command_execution", "bashoutput", "killshell"}
)
"""Tools that run a shell command: the ones whose network use makes them a service too."""

ENVIRONMENT_TOOLS = SHELL_TOOLS | frozenset(
    {
        # file operations
        "read", "write", "edit", "multiedit", "glob", "grep", "notebookedit", "cat", "head",
        "tail", "sed", "awk", "find", "ls", "mkdir", "rm", "cp", "mv", "touch", "chmod",
        "chown", "patch", "file_change", "view_image",
        # version control
        "git",
        # package managers
        "npm", "npx", "yarn", "pnpm", "pip", "pip3", "uv", "cargo", "go", "bundle", "gem",
        "composer", "brew", "apt", "apt-get",
        # build and test
        "make", "cmake", "tsc", "node", "python", "python3", "ruby", "java", "javac",
        "docker", "kubectl",
        # inspection
        "cd", "pwd", "which", "whereis", "file", "stat", "du", "df", "sort", "uniq", "wc",
        "diff", "tr", "cut", "xargs",
    }
)  # fmt: skip
"""OS, filesystem and dev tooling (canonical, lowercase names)."""

ENVIRONMENT_PREFIXES = ("file_", "fs_", "dir_")

ENVIRONMENT_MCP_SERVERS = frozenset(
    {"filesystem", "fs", "shell", "terminal", "git", "desktop-commander", "desktop_commander"}
)
"""MCP servers whose tools operate on the local machine: environment, not service."""

_SHELL_MCP_SERVERS = frozenset({"shell", "terminal", "desktop-commander", "desktop_commander"})

ALIASES: dict[str, str] = {
    # shells
    "run_shell_command": "shell",  # Gemini, Qwen
    "shell_command": "shell",
    "exec_command": "shell",  # Codex function name
    "local_shell": "shell",
    "local_shell_call": "shell",
    "container.exec": "shell",
    "execute": "shell",  # ACP kind
    "bash_output": "bashoutput",
    # files
    "read_file": "read",  # Gemini, Qwen
    "read_many_files": "read",
    "readfile": "read",
    "view": "read",
    "write_file": "write",  # Gemini, Qwen
    "writefile": "write",
    "create_file": "write",
    "replace": "edit",  # Gemini's edit tool
    "edit_file": "edit",
    "str_replace_editor": "edit",
    "str_replace_based_edit_tool": "edit",
    "apply_patch": "edit",  # Codex
    "list_directory": "ls",  # Gemini, Qwen
    "list_dir": "ls",
    "list": "ls",  # opencode
    "search_file_content": "grep",  # Gemini
    "grep_search": "grep",  # Qwen
    "codebase_search": "grep",
    # agent
    "todowrite": "todowrite",
    "todoread": "todoread",
    "write_todos": "write_todos",
    # services
    "web_fetch": "webfetch",
    "fetch": "webfetch",
    "google_web_search": "websearch",
    "web_search": "websearch",
    "mcp_tool_call": "mcp",
}
"""Agent-specific names → the canonical names the lists use."""

ACP_KINDS: dict[str, Category | None] = {
    "read": "environment",
    "edit": "environment",
    "modify": "environment",
    "add": "environment",
    "delete": "environment",
    "move": "environment",
    "search": "environment",
    "execute": "environment",
    "think": "agent",
    "switch_mode": "agent",
    "fetch": "service",
    "other": None,
}
"""ACP ``ToolKind`` values; ``other`` says nothing. ``modify`` and ``add`` are not in ACP's
enum, but AXIS's ``ENVIRONMENT_KINDS`` lists them, so a call of either kind counts as
environment in both."""

CODEX_ITEM_KINDS = {
    "command_execution": "shell",
    "file_change": "file_change",
    "mcp_tool_call": "mcp",
    "web_search": "websearch",
    "todo_list": "todo_list",
}
"""Codex ``exec --json`` item types (kept as the ToolCall's ``kind``)."""

AGENT_PATH_MARKERS = (
    ".claude/",
    ".codex/",
    ".gemini/",
    ".agents/",
    ".qwen/",
    ".opencode/",
    "claude.md",
    "agents.md",
    "gemini.md",
)
"""Environment operations touching these paths are the agent organising itself."""

_URL = re.compile(r"https?://[^\s\"'<>)\]},]+", re.IGNORECASE)
_NETWORK_COMMAND = re.compile(
    r"(?:^|[\s;&|(`$\"'])(?:curl|wget|http|https|xh|httpie|nc|ssh|scp|rsync|ftp)(?=\s|$)",
    re.IGNORECASE,
)


def normalize_tool_name(name: str | None, kind: str | None = None) -> str:
    """The canonical lowercase name of a tool (``Bash`` → ``bash``, ``read_file`` → ``read``).

    ``mcp__server__tool`` names are kept (lowercased). A name that is a title rather than an
    identifier (ACP calls are named by their title: ``echo hi > out.txt``) gives way to the
    call's ``kind``, as does an empty name. Unknown names are returned lowercased.
    """
    raw = (name or "").strip()
    lowered = raw.lower()
    if lowered.startswith("mcp__"):
        return lowered
    if not lowered or is_title(raw):
        from_kind = _name_of_kind(kind)
        return from_kind if from_kind else lowered
    return ALIASES.get(lowered, lowered)


def _name_of_kind(kind: str | None) -> str:
    kind_l = (kind or "").strip().lower()
    if kind_l in CODEX_ITEM_KINDS:
        return CODEX_ITEM_KINDS[kind_l]
    if kind_l in ACP_KINDS and kind_l != "other":
        return ALIASES.get(kind_l, kind_l)
    return ""


_IDENTIFIER = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def is_title(name: str) -> bool:
    """Whether a tool name is a human title (spaces, quotes …) rather than an identifier."""
    return not _IDENTIFIER.match(name)


def _mcp_parts(name: str) -> tuple[str, str] | None:
    parts = name.split("__")
    if len(parts) >= 3 and parts[0] == "mcp":
        return parts[1], "__".join(parts[2:])
    return None


def touches_agent_path(text: str) -> bool:
    """Whether a tool input names an agent-internal path (``.claude/``, ``AGENTS.md`` …)."""
    lowered = text.lower().replace("\\", "/")
    return any(marker in lowered for marker in AGENT_PATH_MARKERS)


def reaches_network(text: str) -> bool:
    """Whether a shell command reaches the network: curl, wget & co., or an http(s) URL."""
    return bool(_URL.search(text) or _NETWORK_COMMAND.search(text))


def urls_in(text: str) -> list[str]:
    """The http(s) URLs in a text, in order, without duplicates."""
    return list(dict.fromkeys(_URL.findall(text)))


def categorize(name: str | None, tool_input: Any = None, kind: str | None = None) -> list[Category]:
    """The categories of one tool call, in the order environment, service, agent."""
    raw = (name or "").strip()
    canonical = normalize_tool_name(raw, kind)
    text = context_text(tool_input)
    if raw and is_title(raw):
        text = f"{raw} {text}"  # an ACP title says what the call did
    mcp = _mcp_parts(canonical)
    if mcp is not None:
        server, tool = mcp
        if server in ENVIRONMENT_MCP_SERVERS:
            shell = server in _SHELL_MCP_SERVERS or ALIASES.get(tool, tool) in SHELL_TOOLS
            return _refine_environment(text, shell=shell)
        return ["service"]
    if raw and is_title(raw) and canonical == raw.lower():
        # A title and no kind to go by: its first word may still be a command (``git status``).
        first = raw.split()[0].strip("`'\"").lower() if raw.split() else ""
        if _category_of(ALIASES.get(first, first)) is not None:
            canonical = ALIASES.get(first, first)
    category = _category_of(canonical)
    if category is None:
        category = ACP_KINDS.get((kind or "").strip().lower())
    if category == "environment":
        return _refine_environment(text, shell=canonical in SHELL_TOOLS or _is_execute(kind))
    return [category] if category is not None else ["service"]


def _is_execute(kind: str | None) -> bool:
    return (kind or "").strip().lower() in ("execute", "command_execution")


def _category_of(canonical: str) -> Category | None:
    if canonical in AGENT_TOOLS:
        return "agent"
    if canonical in ENVIRONMENT_TOOLS or canonical.startswith(ENVIRONMENT_PREFIXES):
        return "environment"
    return None


def _refine_environment(text: str, *, shell: bool) -> list[Category]:
    if touches_agent_path(text):
        return ["agent"]
    if shell and reaches_network(text):
        return ["environment", "service"]
    return ["environment"]
