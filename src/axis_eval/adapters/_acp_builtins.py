"""How each built-in ACP agent is started: binary, environment, config files, model flags.

Per agent (static values in ``isolation_env``; values from the agent entry at spawn time):

* ``claude-sdk`` (claude-agent-acp): Claude Code's variables (``CLAUDE_CONFIG_DIR`` under
  HOME, ``CLAUDE_CODE_MAX_RETRIES=1``, ``IS_SANDBOX=1`` for root, telemetry, updater and
  non-essential traffic off), ``ANTHROPIC_BASE_URL`` = the entry's ``endpoint`` and
  ``ANTHROPIC_MODEL`` = its ``model`` (claude-agent-acp reads no command-line flags; the
  ``--model`` AXIS passes is passed too, harmlessly). Skills go to
  ``$CLAUDE_CONFIG_DIR/skills``.
* ``gemini-acp`` (``gemini --acp --skip-trust``): ``GEMINI_CLI_HOME`` under HOME with
  the same ``settings.json`` as the native ``gemini`` built-in (API-key auth; telemetry,
  statistics and updates off; no upward context scan), empty system settings files,
  ``GEMINI_CLI_TRUST_WORKSPACE=true``, ``GOOGLE_GEMINI_BASE_URL`` = ``endpoint``. MCP
  servers travel in ``session/new``. Skills go to ``$GEMINI_CLI_HOME/.gemini/skills``.
* ``qwen-code`` (``qwen --acp``): ``settings.json`` like Gemini's (auth
  ``openai``), ``OPENAI_BASE_URL`` = ``endpoint`` + ``/v1``.
* ``opencode`` (``opencode acp``): ``XDG_*`` under HOME, updates and sharing off; with an
  ``endpoint``, an ``OPENCODE_CONFIG`` file naming an OpenAI-compatible provider there.
* every other ACP built-in: its command and variables from :mod:`.builtins`, ``XDG_*``
  folders under HOME.

Only ``claude-sdk``, ``gemini-acp`` and ``qwen-code`` turn ``model`` and ``flags`` into
command-line flags, as AXIS does; the other ACP agents ignore them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axis_eval.adapters import _native
from axis_eval.adapters.base import AdapterInput
from axis_eval.adapters.builtins import BuiltinAgent
from axis_eval.adapters.claude_code import CLAUDE_ENV
from axis_eval.adapters.gemini import home_env as gemini_home_env, settings_for as gemini_settings
from axis_eval.files import atomic_write_text

__all__ = ["BuiltinRecipe", "builtin_recipe"]

_GEMINI_RETRIES = {"maxAttempts": 2, "retryFetchErrors": False}
"""Bounded retries: one retry of a failed model call, none for a refused connection."""
_QWEN_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "openai"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True},
}


def _model_and_flags(inp: AdapterInput) -> list[str]:
    return _native.model_args(inp, "m") + _native.flag_args(inp.agent.flags)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


# -- claude-sdk --------------------------------------------------------------------------


def _claude_static(home: str) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": f"{home}/.claude", **CLAUDE_ENV}


def _claude_env(inp: AdapterInput) -> dict[str, str]:
    env: dict[str, str] = {}
    if inp.endpoint:
        env["ANTHROPIC_BASE_URL"] = _native.endpoint_base(inp.endpoint)
    if inp.agent.model:
        env["ANTHROPIC_MODEL"] = inp.agent.model
    return env


def _claude_prepare(inp: AdapterInput) -> None:
    folder = _native.config_dir(inp, "CLAUDE_CONFIG_DIR", ".claude")
    _native.install_skills(inp, folder / "skills")


# -- gemini-acp --------------------------------------------------------------------------


def _gemini_static(home: str) -> dict[str, str]:
    return {**gemini_home_env(home), "GOOGLE_CLOUD_PROJECT": ""}


def _gemini_env(inp: AdapterInput) -> dict[str, str]:
    if not inp.endpoint:
        return {}
    return {"GOOGLE_GEMINI_BASE_URL": _native.endpoint_base(inp.endpoint)}


def _gemini_prepare(inp: AdapterInput) -> None:
    """``$GEMINI_CLI_HOME/.gemini/settings.json``; MCP servers go in ``session/new``."""
    dot = _native.config_dir(inp, "GEMINI_CLI_HOME", ".gemini") / ".gemini"
    settings = gemini_settings(dataclasses.replace(inp, mcp_servers={}))
    settings.setdefault("general", {}).update(_GEMINI_RETRIES)
    _write_json(dot / "settings.json", settings)
    (dot / "settings.json").chmod(0o600)
    for name in ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"):
        value = inp.env.get(name)
        if value and not Path(value).exists():
            _write_json(Path(value), {})
    _native.install_skills(inp, dot / "skills")


# -- qwen-code ---------------------------------------------------------------------------


def _qwen_env(inp: AdapterInput) -> dict[str, str]:
    return {"OPENAI_BASE_URL": _native.openai_base(inp.endpoint)} if inp.endpoint else {}


def _qwen_prepare(inp: AdapterInput) -> None:
    folders = {Path(inp.env.get("HOME") or inp.home) / ".qwen"}
    if inp.env.get("QWEN_CODE_HOME"):
        folders.add(Path(inp.env["QWEN_CODE_HOME"]))
    for folder in folders:
        _write_json(folder / "settings.json", _QWEN_SETTINGS)


# -- opencode ----------------------------------------------------------------------------


def _opencode_config(inp: AdapterInput) -> Path:
    return Path(inp.home) / ".config" / "opencode" / "axis-provider.json"


def _opencode_env(inp: AdapterInput) -> dict[str, str]:
    return {"OPENCODE_CONFIG": str(_opencode_config(inp))} if inp.endpoint else {}


def _opencode_prepare(inp: AdapterInput) -> None:
    if not inp.endpoint:
        return
    model = inp.agent.model or "default"
    config = {
        "provider": {
            "axis": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "axis-eval endpoint",
                "options": {
                    "baseURL": _native.openai_base(inp.endpoint),
                    "apiKey": inp.env.get("OPENAI_API_KEY") or "axis-eval",
                },
                "models": {model: {"name": model}},
            }
        },
        "model": f"axis/{model}",
        "permission": {"bash": "allow", "edit": "allow"},
        "autoupdate": False,
        "share": "disabled",
    }
    _write_json(_opencode_config(inp), config)


# -- the table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Recipe:
    static_env: Callable[[str], dict[str, str]] | None = None
    """``home -> variables`` set for every job (besides the built-in's own)."""
    env: Callable[[AdapterInput], dict[str, str]] | None = None
    optional_env: tuple[str, ...] = ()
    prepare: Callable[[AdapterInput], None] | None = None
    extra: dict[str, str] = field(default_factory=dict)


_RECIPES: dict[str, _Recipe] = {
    "claude-sdk": _Recipe(_claude_static, _claude_env, ("ANTHROPIC_BASE_URL",), _claude_prepare),
    "gemini-acp": _Recipe(
        _gemini_static, _gemini_env, ("GOOGLE_GEMINI_BASE_URL",), _gemini_prepare
    ),
    "qwen-code": _Recipe(
        None, _qwen_env, ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"), _qwen_prepare
    ),
    "opencode": _Recipe(
        None,
        _opencode_env,
        ("OPENAI_API_KEY",),
        _opencode_prepare,
        {
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        },
    ),
}


@dataclass(frozen=True)
class BuiltinRecipe:
    """What :func:`axis_eval.adapters.acp.builtin_acp_adapter` builds one built-in from."""

    isolation_env: Callable[[str, str], dict[str, str]]
    resolve_command: Callable[[AdapterInput], list[str]]
    version: Callable[[AdapterInput], str | None]
    optional_env: tuple[str, ...]
    prepare: Callable[[AdapterInput], None] | None
    build_args: Callable[[AdapterInput], list[str]] | None
    env: Callable[[AdapterInput], dict[str, str]] | None


def builtin_recipe(builtin: BuiltinAgent, *, require_binary: bool = True) -> BuiltinRecipe:
    """How one built-in ACP agent starts (see the module docstring).

    Raises:
        PreflightError: its CLI is neither in the pinned cache nor on PATH (and
            ``require_binary``; otherwise the run fails at spawn unless the agent entry
            sets ``command``).
    """
    recipe = _RECIPES.get(builtin.name, _Recipe())
    cli = _native.NativeCli.load(builtin, require_binary=require_binary)

    def isolation_env(workspace: str, home: str) -> dict[str, str]:
        env = _native.xdg_env(home)
        env.update({k: v.replace("{home}", home) for k, v in builtin.isolation_env.items()})
        if recipe.static_env is not None:
            env.update(recipe.static_env(home))
        env.update(recipe.extra)
        return env

    def resolve_command(inp: AdapterInput) -> list[str]:
        return [*cli.resolve_command(inp), *builtin.command[1:]]

    return BuiltinRecipe(
        isolation_env=isolation_env,
        resolve_command=resolve_command,
        version=cli.version_for,
        optional_env=recipe.optional_env,
        prepare=recipe.prepare,
        build_args=_model_and_flags if builtin.passes_model else None,
        env=recipe.env,
    )
