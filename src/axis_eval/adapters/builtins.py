"""Every built-in agent name AXIS knows, as data: command, protocol, keys, npm package.

The registry knows all of them from the start, so configs naming any AXIS agent load and
plan; whether an adapter can run yet is a separate flag, checked at pre-flight.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Protocol = Literal["claude-stream-json", "codex-json", "gemini-stream-json", "acp", "command"]


@dataclass(frozen=True)
class BuiltinAgent:
    """What axis-eval knows about one built-in agent name."""

    name: str
    protocol: Protocol
    command: tuple[str, ...]
    """argv prefix of the agent CLI."""
    required_env: tuple[str, ...] = ()
    """API key names; one must be set (or a local login found) before any job starts."""
    npm_package: str | None = None
    isolation_env: dict[str, str] = field(default_factory=dict)
    """Variables set per job; ``{home}`` is the per-job HOME."""
    passes_model: bool = False


_CLAUDE_ENV = {
    "CLAUDE_CONFIG_DIR": "{home}/.claude",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
}

BUILTINS: dict[str, BuiltinAgent] = {
    a.name: a
    for a in (
        BuiltinAgent(
            "claude-code",
            "claude-stream-json",
            ("claude",),
            ("ANTHROPIC_API_KEY",),
            "@anthropic-ai/claude-code",
            _CLAUDE_ENV,
            True,
        ),
        BuiltinAgent(
            "codex",
            "codex-json",
            ("codex", "exec"),
            ("CODEX_API_KEY",),
            "@openai/codex",
            {"CODEX_HOME": "{home}/.codex", "CODEX_DISABLE_TELEMETRY": "1"},
            True,
        ),
        BuiltinAgent(
            "gemini",
            "gemini-stream-json",
            ("gemini",),
            ("GEMINI_API_KEY",),
            "@google/gemini-cli",
            {"GEMINI_CLI_HOME": "{home}/.gemini", "GEMINI_TELEMETRY_ENABLED": "false"},
            True,
        ),
        BuiltinAgent(
            "claude-sdk",
            "acp",
            ("claude-agent-acp",),
            ("ANTHROPIC_API_KEY",),
            "@agentclientprotocol/claude-agent-acp",
            _CLAUDE_ENV,
            True,
        ),
        BuiltinAgent(
            "codex-sdk", "acp", ("codex-acp",), ("OPENAI_API_KEY",), "@zed-industries/codex-acp"
        ),
        BuiltinAgent(
            "gemini-acp",
            "acp",
            ("gemini", "--acp", "--skip-trust"),
            ("GEMINI_API_KEY",),
            "@google/gemini-cli",
            {"GEMINI_CLI_HOME": "{home}/.gemini", "GEMINI_TELEMETRY_ENABLED": "false"},
            True,
        ),
        BuiltinAgent(
            "qwen-code",
            "acp",
            ("qwen", "--acp"),
            (),
            "@qwen-code/qwen-code",
            {"QWEN_CODE_HOME": "{home}/.qwen", "QWEN_TELEMETRY_ENABLED": "false"},
            True,
        ),
        BuiltinAgent("goose", "acp", ("goose", "acp")),
        BuiltinAgent("opencode", "acp", ("opencode", "acp"), (), "opencode-ai"),
        BuiltinAgent("stakpak", "acp", ("stakpak", "acp")),
        BuiltinAgent("blackbox", "acp", ("blackbox", "--experimental-acp"), ("BLACKBOX_API_KEY",)),
        BuiltinAgent("fast-agent", "acp", ("fast-agent-acp",)),
        BuiltinAgent("mistral-vibe", "acp", ("vibe-acp",), ("MISTRAL_API_KEY",)),
        BuiltinAgent(
            "factory-droid", "acp", ("droid-acp",), ("FACTORY_API_KEY",), "@yaonyan/droid-acp"
        ),
        BuiltinAgent("poolside", "acp", ("pool", "acp"), ("POOLSIDE_API_KEY",)),
        BuiltinAgent(
            "vtcode",
            "acp",
            ("vtcode", "acp"),
            isolation_env={"VT_ACP_ENABLED": "1", "VT_ACP_ZED_ENABLED": "1"},
        ),
        BuiltinAgent("cursor-agent", "acp", ("agent", "acp"), ("CURSOR_API_KEY",)),
        BuiltinAgent(
            "auggie", "acp", ("auggie", "--acp"), ("AUGMENT_SESSION_AUTH",), "@augmentcode/auggie"
        ),
        BuiltinAgent("kimi", "acp", ("kimi", "acp")),
        BuiltinAgent("openhands", "acp", ("openhands", "acp")),
        BuiltinAgent("cline", "acp", ("cline", "--acp"), (), "cline"),
        BuiltinAgent("kiro-cli", "acp", ("kiro-cli", "acp")),
        BuiltinAgent("kilo", "acp", ("kilo", "acp")),
        BuiltinAgent("qoder", "acp", ("qodercli", "--acp"), ("QODER_PERSONAL_ACCESS_TOKEN",)),
        BuiltinAgent("copilot", "acp", ("copilot", "--acp"), (), "@github/copilot"),
    )
}
"""AXIS 1.17's 24 names plus ``gemini-acp``. AXIS 1.17's ``gemini`` meant the ACP adapter;
here ``gemini`` is the native stream-json CLI and ``gemini-acp`` is ``gemini --acp``."""
