"""The ``codex`` built-in: ``codex exec --json`` with a generated ``$CODEX_HOME/config.toml``.

Command: ``codex exec --json --skip-git-repo-check
--dangerously-bypass-approvals-and-sandbox [--model M] [flags]`` with the prompt on
stdin. ``CODEX_HOME`` lives under the job's HOME and ``TMPDIR`` is the job's ``tmp``
folder, which does not contain it (Codex refuses to set up its sandbox helpers under
``TMPDIR``). The generated config points a model provider at the agent's ``endpoint``
(``<endpoint>/v1``, Responses API), bounds retries, turns analytics off and disables the
features that reach out to GitHub and ChatGPT, and lists the MCP servers.

Codex reports tokens but no cost: the cost is estimated from :mod:`~.prices` and marked
estimated. Its ``input_tokens`` include cached input; the transcript records the uncached
part as ``input`` and the cached part as ``cache_read_input``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters import _native, mcp_files, prices
from axis_eval.adapters.base import AdapterInput, AdapterResult, ResultContext, StreamContext
from axis_eval.adapters.mcp_files import toml_string
from axis_eval.files import atomic_write_text

__all__ = ["API_KEY_ENV", "DEFAULT_MODEL", "NATIVE", "SANDBOX_FLAGS", "config_toml", "on_line"]

API_KEY_ENV = "CODEX_API_KEY"
PROVIDER = "axis"
DEFAULT_MODEL: str | None = None
"""The model written to ``config.toml`` when the agent entry names none: None keeps
Codex's own default."""

SANDBOX_FLAGS = (
    "dangerously-bypass-approvals-and-sandbox",
    "sandbox",
    "s",
    "full-auto",
    "ask-for-approval",
    "a",
)
"""Agent ``flags`` that replace the default ``--dangerously-bypass-approvals-and-sandbox``."""

_FEATURES_OFF = (
    "plugins",
    "remote_plugin",
    "apps",
    "tool_suggest",
    "api_key_model_discovery",
    "unbounded_connection_retries",
)
"""Features that make Codex contact GitHub/ChatGPT, or retry an unreachable API forever."""


def config_toml(inp: AdapterInput) -> str:
    """The ``config.toml`` for one job."""
    lines = ["# Written by axis-eval for one job.", "check_for_update_on_startup = false"]
    if inp.endpoint:
        lines.append(f"model_provider = {toml_string(PROVIDER)}")
    lines += ["", "[analytics]", "enabled = false", "", "[features]"]
    lines += [f"{name} = false" for name in _FEATURES_OFF]
    if inp.endpoint:
        base = _native.openai_base(inp.endpoint)
        lines += [
            "",
            f"[model_providers.{PROVIDER}]",
            f"name = {toml_string('axis-eval endpoint')}",
            f"base_url = {toml_string(base)}",
            f"env_key = {toml_string(API_KEY_ENV)}",
            'wire_api = "responses"',
            "request_max_retries = 1",
            "stream_max_retries = 1",
        ]
    return "\n".join(lines) + "\n" + mcp_files.codex_mcp_toml(inp.mcp_servers)


@dataclass
class CodexState(_native.NativeState):
    """What one run's stream has told us so far."""

    model: str | None = DEFAULT_MODEL
    thread_id: str | None = None
    answer: str | None = None
    """The last ``agent_message``."""
    failure: str | None = None
    """``turn.failed``'s message."""
    errors: list[str] = field(default_factory=list)
    usage: TokenUsage | None = None
    started: set[str] = field(default_factory=set)


def _list(value: Any) -> list[Any]:
    """A list field; anything else (a number, an object …) reads as empty."""
    return value if isinstance(value, list) else []


def _tool_name(item: dict[str, Any]) -> str:
    kind = str(item.get("type"))
    if kind == "command_execution":
        return "shell"
    if kind == "mcp_tool_call":
        return f"mcp__{item.get('server')}__{item.get('tool')}"
    return kind


def _tool_input(item: dict[str, Any]) -> Any:
    kind = item.get("type")
    if kind == "command_execution":
        return {"command": item.get("command")}
    if kind == "file_change":
        return {"changes": item.get("changes")}
    if kind == "mcp_tool_call":
        return item.get("arguments")
    if kind == "web_search":
        return {"query": item.get("query")}
    if kind == "todo_list":
        return {"items": item.get("items")}
    return {k: v for k, v in item.items() if k not in ("id", "type", "status")}


def _tool_output(item: dict[str, Any]) -> tuple[str, bool]:
    kind = item.get("type")
    status = item.get("status")
    failed = status in ("failed", "declined")
    if kind == "command_execution":
        code = item.get("exit_code")
        output = str(item.get("aggregated_output") or "")
        return output, failed or (isinstance(code, int) and code != 0)
    if kind == "file_change":
        changes = _list(item.get("changes"))
        lines = [f"{c.get('kind')}: {c.get('path')}" for c in changes if isinstance(c, dict)]
        return "\n".join(lines), failed
    if kind == "mcp_tool_call":
        error = item.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"]), True
        result = item.get("result")
        content = result.get("content") if isinstance(result, dict) else result
        return _native.as_text(content), failed
    if kind == "todo_list":
        items = _list(item.get("items"))
        return "\n".join(
            f"[{'x' if i.get('completed') else ' '}] {i.get('text')}"
            for i in items
            if isinstance(i, dict)
        ), failed
    return context_text(item), failed


def _on_item(kind: str, item: dict[str, Any], ctx: StreamContext[CodexState]) -> None:
    item_type = item.get("type")
    item_id = str(item.get("id") or "")
    if item_type == "agent_message":
        if kind == "item.completed":
            text = str(item.get("text") or "")
            ctx.feed_text(text)
            ctx.transcript.assistant(text)
            ctx.state.answer = text
        return
    if item_type == "reasoning":
        if kind == "item.completed":
            text = str(item.get("text") or "")
            ctx.feed_text(text)
            ctx.transcript.thinking(text)
        return
    if item_type == "error":
        message = str(item.get("message") or "error")
        ctx.transcript.system(f"warning: {message}")
        ctx.warn(f"codex: {message:.500}")  # the whole message is in the transcript
        return
    if kind == "item.updated":
        return
    if item_id not in ctx.state.started:
        ctx.state.started.add(item_id)
        tool_input = _tool_input(item)
        ctx.feed_text(context_text(tool_input))
        ctx.transcript.tool_call(
            _tool_name(item), tool_input, id=item_id or None, kind=str(item_type)
        )
    if kind == "item.completed":
        output, is_error = _tool_output(item)
        ctx.feed_text(output)
        ctx.transcript.tool_result(item_id or None, output, is_error=is_error)


def on_line(event: dict[str, Any], ctx: StreamContext[CodexState]) -> None:
    """Map one ``codex exec --json`` event into the transcript."""
    kind = event.get("type")
    state = ctx.state
    if kind == "thread.started":
        if isinstance(event.get("thread_id"), str):
            state.thread_id = event["thread_id"]
    elif kind == "turn.started":
        return
    elif kind in ("item.started", "item.updated", "item.completed"):
        item = event.get("item")
        if isinstance(item, dict):
            _on_item(str(kind), item, ctx)
    elif kind == "turn.completed":
        usage = event.get("usage")
        if isinstance(usage, dict):
            cached = _native.int_of(usage.get("cached_input_tokens"))
            turn = _native.usage_of(
                max(_native.int_of(usage.get("input_tokens")) - cached, 0),
                usage.get("output_tokens"),
                cached,
                usage.get("cache_write_input_tokens"),
            )
            state.usage = turn if state.usage is None else state.usage + turn
            ctx.transcript.set_usage(state.usage)
    elif kind == "turn.failed":
        error = event.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        state.failure = str(message or "Codex turn failed")
        ctx.transcript.error(state.failure)
    elif kind == "error":
        message = str(event.get("message") or "error")
        if message.startswith("Reconnecting"):
            ctx.transcript.system(message)
        else:
            state.errors.append(message)
            ctx.transcript.error(message)
    else:
        ctx.transcript.system(json.dumps(event, ensure_ascii=False)[:2000])


def _get_result(ctx: ResultContext[CodexState]) -> AdapterResult:
    state = ctx.state
    transcript = ctx.transcript.transcript
    if state.usage is not None:
        cost = prices.estimate_cost(transcript.model, state.usage)
        if cost is not None:
            ctx.transcript.set_cost(cost, estimated=True)
    if state.failure is not None:
        return AdapterResult(result=None, error=state.failure, session_id=state.thread_id)
    error = state.errors[-1] if state.answer is None and state.errors else None
    return AdapterResult(result=state.answer, error=error, session_id=state.thread_id)


def _build_args(inp: AdapterInput) -> list[str]:
    flags = inp.agent.flags
    args = ["exec", "--json"]
    if not _native.has_flag(flags, "skip-git-repo-check"):
        args.append("--skip-git-repo-check")
    if not _native.has_flag(flags, *SANDBOX_FLAGS):
        args.append("--dangerously-bypass-approvals-and-sandbox")
    args += _native.model_args(inp, "m")
    return args + _native.flag_args(flags)


def _prepare(inp: AdapterInput) -> None:
    folder = _native.config_dir(inp, "CODEX_HOME", ".codex")
    path = folder / "config.toml"
    atomic_write_text(path, config_toml(inp))
    path.chmod(0o600)
    _native.install_skills(inp, folder / "skills")


NATIVE = _native.NativeRecipe(
    args=_build_args,
    home_env=lambda home: {"CODEX_HOME": f"{home}/.codex", "CODEX_DISABLE_TELEMETRY": "1"},
    base_url_env="OPENAI_BASE_URL",
    prepare=_prepare,
    state=CodexState,
    on_line=on_line,
    get_result=_get_result,
)
"""What the ``codex`` adapter is built from (see :mod:`._native`)."""
