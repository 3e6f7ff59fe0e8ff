"""The ``claude-code`` built-in: Claude Code's ``-p --output-format stream-json``.

Command: ``claude -p --output-format stream-json --verbose --strict-mcp-config
[--mcp-config $CLAUDE_CONFIG_DIR/mcp.json] --permission-mode bypassPermissions
[--model M] [flags]`` with the prompt on stdin. All state lives in ``CLAUDE_CONFIG_DIR``
under the job's HOME; telemetry, the updater, error reporting and non-essential traffic
are off; retries are bounded (``CLAUDE_CODE_MAX_RETRIES=1``) so an unreachable API fails
fast instead of being retried; ``IS_SANDBOX=1`` lets ``bypassPermissions`` run as root.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters import _native, mcp_files
from axis_eval.adapters.base import AdapterInput, AdapterResult, ResultContext, StreamContext

__all__ = ["CLAUDE_ENV", "NATIVE", "PERMISSION_FLAGS", "on_line"]

CLAUDE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_MAX_RETRIES": "1",
    "IS_SANDBOX": "1",
}
"""Set for every job (a config ``env`` entry of the same name wins)."""

PERMISSION_FLAGS = (
    "permission-mode",
    "dangerously-skip-permissions",
    "allow-dangerously-skip-permissions",
    "allowedTools",
    "allowed-tools",
)
"""Agent ``flags`` that replace the default ``--permission-mode bypassPermissions``."""


@dataclass
class ClaudeState(_native.NativeState):
    """What one run's stream has told us so far."""

    session_id: str | None = None
    result: dict[str, Any] | None = None
    """The ``result`` event."""
    message_usage: dict[str, TokenUsage] = field(default_factory=dict)
    """Per API message id (each content block repeats it): the fallback without a result."""
    denials: int = 0


def _text_of(content: Any) -> str:
    return _native.as_text(content)


def _list(value: Any) -> list[Any]:
    """A list field; anything else (a number, an object …) reads as empty."""
    return value if isinstance(value, list) else []


def _on_system(event: dict[str, Any], ctx: StreamContext[ClaudeState]) -> None:
    state = ctx.state
    subtype = event.get("subtype")
    if subtype == "init":
        version = event.get("claude_code_version")
        if isinstance(version, str) and version:
            state.version = version
        if isinstance(event.get("model"), str):
            state.model = event["model"]
        if isinstance(event.get("session_id"), str):
            state.session_id = event["session_id"]
        servers = _list(event.get("mcp_servers"))
        mcp = ", ".join(
            f"{s.get('name')}: {s.get('status')}" for s in servers if isinstance(s, dict)
        )
        tools = _list(event.get("tools"))
        ctx.transcript.system(
            f"init: model {state.model}, {len(tools)} tools"
            + (f", MCP servers {mcp}" if mcp else "")
        )
        for s in servers:
            if isinstance(s, dict) and s.get("status") not in (None, "connected"):
                ctx.warn(
                    f"claude-code: MCP server {s.get('name')!r:.100} is {s.get('status')!s:.100}"
                )
        return
    if subtype == "api_retry":
        ctx.transcript.system(
            f"API retry {event.get('attempt')}/{event.get('max_retries')}: {event.get('error')}"
        )
        return
    ctx.transcript.system(json.dumps(event, ensure_ascii=False)[:2000])


def _on_assistant(event: dict[str, Any], ctx: StreamContext[ClaudeState]) -> None:
    message = event.get("message")
    if not isinstance(message, dict):
        return
    usage = message.get("usage")
    msg_id = message.get("id")
    if (
        isinstance(usage, dict)
        and isinstance(msg_id, str)
        and message.get("model") != "<synthetic>"
    ):
        ctx.state.message_usage[msg_id] = _native.usage_of(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
        )
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text") or "")
            ctx.feed_text(text)
            if event.get("error") or message.get("model") == "<synthetic>":
                ctx.transcript.error(text)
            else:
                ctx.transcript.assistant(text)
        elif kind in ("thinking", "redacted_thinking"):
            text = str(block.get("thinking") or "")
            ctx.feed_text(text)
            ctx.transcript.thinking(text)
        elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            name = str(block.get("name") or "unknown")
            tool_input = block.get("input")
            ctx.feed_text(context_text(tool_input) if tool_input else "")
            tool_id = block.get("id") if isinstance(block.get("id"), str) else None
            ctx.transcript.tool_call(name, tool_input, id=tool_id, kind=kind)


def _on_user(event: dict[str, Any], ctx: StreamContext[ClaudeState]) -> None:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        ctx.transcript.user(content)
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_result":
            output = _text_of(block.get("content"))
            ctx.feed_text(output)
            tool_id = block.get("tool_use_id")
            ctx.transcript.tool_result(
                tool_id if isinstance(tool_id, str) else None,
                output,
                is_error=block.get("is_error") is True,
            )
        elif block.get("type") == "text" and block.get("text"):
            ctx.transcript.user(str(block["text"]))


def on_line(event: dict[str, Any], ctx: StreamContext[ClaudeState]) -> None:
    """Map one stream-json event into the transcript."""
    kind = event.get("type")
    if kind == "system":
        _on_system(event, ctx)
    elif kind == "assistant":
        _on_assistant(event, ctx)
    elif kind == "user":
        _on_user(event, ctx)
    elif kind == "result":
        ctx.state.result = event
        usage = _result_usage(event)
        if usage is not None:
            ctx.transcript.set_usage(usage)
        denials = event.get("permission_denials")
        if isinstance(denials, list) and denials:
            ctx.state.denials = len(denials)
            ctx.warn(f"claude-code: {len(denials)} tool call(s) were denied by the permission mode")
    elif kind in ("stream_event", "tool_progress", "rate_limit_event", "keep_alive"):
        return
    else:
        ctx.transcript.system(json.dumps(event, ensure_ascii=False)[:2000])


def _result_usage(event: dict[str, Any]) -> TokenUsage | None:
    usage = event.get("usage")
    if not isinstance(usage, dict):
        return None
    return _native.usage_of(
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        usage.get("cache_read_input_tokens"),
        usage.get("cache_creation_input_tokens"),
    )


def _on_end(ctx: StreamContext[ClaudeState]) -> None:
    if ctx.state.result is None and ctx.state.message_usage:
        total = TokenUsage()
        for usage in ctx.state.message_usage.values():
            total = total + usage
        ctx.transcript.set_usage(total)


def _get_result(ctx: ResultContext[ClaudeState]) -> AdapterResult:
    state = ctx.state
    event = state.result
    if event is None:
        return AdapterResult(result=None, session_id=state.session_id)
    text = event.get("result") if isinstance(event.get("result"), str) else None
    cost_usd = _native.finite_cost(event.get("total_cost_usd"))
    session = event.get("session_id") if isinstance(event.get("session_id"), str) else None
    error: str | None = None
    if event.get("is_error") is True or str(event.get("subtype", "success")) != "success":
        errors = event.get("errors")
        listed = "; ".join(str(e) for e in errors) if isinstance(errors, list) else ""
        error = text or listed or f"Claude Code ended with {event.get('subtype')}"
        text = None
    return AdapterResult(
        result=text,
        error=error,
        cost_usd=cost_usd,
        session_id=session or state.session_id,
    )


def _build_args(inp: AdapterInput) -> list[str]:
    flags = inp.agent.flags
    args = ["-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
    if inp.mcp_servers:
        folder = _native.config_dir(inp, "CLAUDE_CONFIG_DIR", ".claude")
        args += ["--mcp-config", str(folder / "mcp.json")]
    if not _native.has_flag(flags, *PERMISSION_FLAGS):
        args += ["--permission-mode", "bypassPermissions"]
    args += _native.model_args(inp)
    return args + _native.flag_args(flags)


def _prepare(inp: AdapterInput) -> None:
    folder = _native.config_dir(inp, "CLAUDE_CONFIG_DIR", ".claude")
    mcp_files.write_claude_mcp(folder, inp.mcp_servers)
    _native.install_skills(inp, folder / "skills")
    _native.set_base_url(inp, "ANTHROPIC_BASE_URL")


NATIVE = _native.NativeRecipe(
    args=_build_args,
    home_env=lambda home: {"CLAUDE_CONFIG_DIR": f"{home}/.claude", **CLAUDE_ENV},
    base_url_env="ANTHROPIC_BASE_URL",
    prepare=_prepare,
    state=ClaudeState,
    on_line=on_line,
    on_end=_on_end,
    get_result=_get_result,
)
"""What the ``claude-code`` adapter is built from (see :mod:`._native`)."""
