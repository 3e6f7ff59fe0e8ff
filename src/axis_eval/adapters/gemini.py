"""The ``gemini`` built-in: Gemini CLI's native ``--output-format stream-json``.

(AXIS 1.17's ``gemini`` meant Gemini CLI's ACP mode; that is ``gemini-acp`` here.)

Command: ``gemini --output-format stream-json --yolo [-m M] [flags] -p ""`` with the
prompt on stdin (Gemini CLI reads stdin in headless mode and appends ``-p``'s text, empty
here). Without ``--yolo`` headless Gemini does not even offer its shell and write tools.
``GEMINI_CLI_HOME`` is Gemini's home folder: settings go to
``$GEMINI_CLI_HOME/.gemini/settings.json`` (API-key auth, telemetry, usage statistics and
auto-update off, no upward context scan, MCP servers). The host's system settings files
are replaced by empty ones in the job's config folder.

Gemini reports tokens (its model router's classifier call included) but no cost: the cost
is estimated per model from :mod:`~.prices` and marked estimated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters import _native, mcp_files, prices
from axis_eval.adapters.base import AdapterInput, AdapterResult, ResultContext, StreamContext
from axis_eval.files import atomic_write_text

__all__ = ["APPROVAL_FLAGS", "NATIVE", "home_env", "on_line", "settings_for"]

APPROVAL_FLAGS = ("yolo", "y", "approval-mode")
"""Agent ``flags`` that replace the default ``--yolo``."""


def settings_for(inp: AdapterInput) -> dict[str, Any]:
    """The user ``settings.json`` for one job."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": 1,
            "retryFetchErrors": False,
        },
        "context": {"discoveryMaxDirs": 0, "memoryBoundaryMarkers": []},
    }
    if inp.mcp_servers:
        settings["mcpServers"] = mcp_files.gemini_mcp_servers(inp.mcp_servers)
    return settings


@dataclass
class GeminiState(_native.NativeState):
    """What one run's stream has told us so far."""

    session_id: str | None = None
    result: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)
    model_usage: dict[str, TokenUsage] = field(default_factory=dict)


def _usage(stats: dict[str, Any]) -> TokenUsage:
    cached = _native.int_of(stats.get("cached"))
    if "input" in stats:
        fresh = _native.int_of(stats.get("input"))
    else:
        fresh = max(_native.int_of(stats.get("input_tokens")) - cached, 0)
    return _native.usage_of(fresh, stats.get("output_tokens"), cached)


def _on_result(event: dict[str, Any], ctx: StreamContext[GeminiState]) -> None:
    state = ctx.state
    state.result = event
    stats = event.get("stats")
    if isinstance(stats, dict):
        ctx.transcript.set_usage(_usage(stats))
        models = stats.get("models")
        if isinstance(models, dict):
            state.model_usage = {
                str(name): _usage(value)
                for name, value in models.items()
                if isinstance(value, dict)
            }
    error = event.get("error")
    if event.get("status") not in (None, "success"):
        message = error.get("message") if isinstance(error, dict) else None
        text = str(message or f"Gemini CLI ended with status {event.get('status')}")
        state.errors.append(text)
        ctx.transcript.error(text)


def on_line(event: dict[str, Any], ctx: StreamContext[GeminiState]) -> None:
    """Map one stream-json event into the transcript."""
    kind = event.get("type")
    state = ctx.state
    t = ctx.transcript
    if kind == "init":
        if isinstance(event.get("session_id"), str):
            state.session_id = event["session_id"]
        if isinstance(event.get("model"), str) and event["model"] != "auto":
            state.model = event["model"]
    elif kind == "message":
        content = _native.as_text(event.get("content"))
        if event.get("role") == "user":
            return
        ctx.feed_text(content)
        if event.get("delta"):
            t.assistant_delta(content)
        else:
            t.flush()
            t.assistant(content)
    elif kind == "tool_use":
        params = event.get("parameters")
        ctx.feed_text(context_text(params) if params else "")
        tool_id = event.get("tool_id") if isinstance(event.get("tool_id"), str) else None
        t.tool_call(str(event.get("tool_name") or "unknown"), params, id=tool_id)
    elif kind == "tool_result":
        error = event.get("error")
        output = event.get("output")
        if output is None and isinstance(error, dict):
            output = error.get("message")
        text = _native.as_text(output)
        ctx.feed_text(text)
        tool_id = event.get("tool_id") if isinstance(event.get("tool_id"), str) else None
        t.tool_result(tool_id, text, is_error=event.get("status") not in (None, "success"))
    elif kind == "error":
        message = str(event.get("message") or "error")
        if event.get("severity") == "warning":
            t.system(f"warning: {message}")
        else:
            state.errors.append(message)
            t.error(message)
    elif kind == "result":
        t.flush()
        _on_result(event, ctx)
    else:
        t.system(json.dumps(event, ensure_ascii=False)[:2000])


def _estimate(state: GeminiState, fallback_model: str | None, usage: TokenUsage) -> float | None:
    if state.model_usage:
        total = 0.0
        for model, model_usage in state.model_usage.items():
            cost = prices.estimate_cost(model, model_usage)
            if cost is None:
                return None
            total += cost
        return round(total, 10)
    return prices.estimate_cost(fallback_model, usage)


def _get_result(ctx: ResultContext[GeminiState]) -> AdapterResult:
    state = ctx.state
    transcript = ctx.transcript.transcript
    if transcript.model is None and state.model_usage:
        transcript.model = max(state.model_usage.items(), key=lambda kv: kv[1].total)[0]
    answer = ctx.transcript.last_assistant_text()
    if state.result is not None and transcript.usage.total:
        cost = _estimate(state, transcript.model, transcript.usage)
        if cost is not None:
            ctx.transcript.set_cost(cost, estimated=True)
    if state.errors:
        return AdapterResult(result=None, error=state.errors[-1], session_id=state.session_id)
    if state.result is None:
        answer = None if ctx.exit_code != 0 else answer
    return AdapterResult(result=answer, session_id=state.session_id)


def _build_args(inp: AdapterInput) -> list[str]:
    flags = inp.agent.flags
    args = ["--output-format", "stream-json"]
    if not _native.has_flag(flags, *APPROVAL_FLAGS):
        args.append("--yolo")
    args += _native.model_args(inp, "m")
    return [*args, *_native.flag_args(flags), "-p", ""]


def home_env(home: str) -> dict[str, str]:
    """Gemini CLI's variables for a job's HOME (the native and the ACP built-in share them):
    its home and system settings inside it, telemetry off, the workspace trusted."""
    gemini_home = f"{home}/.gemini"
    return {
        "GEMINI_CLI_HOME": gemini_home,
        "GEMINI_TELEMETRY_ENABLED": "false",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH": f"{gemini_home}/system-settings.json",
        "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": f"{gemini_home}/system-defaults.json",
    }


def _prepare(inp: AdapterInput) -> None:
    gemini_home = _native.config_dir(inp, "GEMINI_CLI_HOME", ".gemini")
    dot = gemini_home / ".gemini"
    path = dot / "settings.json"
    atomic_write_text(path, json.dumps(settings_for(inp), indent=2) + "\n")
    path.chmod(0o600)
    for name in ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"):
        value = inp.env.get(name)
        if value and not Path(value).exists():
            atomic_write_text(Path(value), "{}\n")
    _native.install_skills(inp, dot / "skills")
    _native.set_base_url(inp, "GOOGLE_GEMINI_BASE_URL")


NATIVE = _native.NativeRecipe(
    args=_build_args,
    home_env=home_env,
    base_url_env="GOOGLE_GEMINI_BASE_URL",
    prepare=_prepare,
    state=GeminiState,
    on_line=on_line,
    get_result=_get_result,
)
"""What the ``gemini`` adapter (native stream-json) is built from (see :mod:`._native`)."""
