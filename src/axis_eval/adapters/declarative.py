"""Adapters described in the config without Python: a command, its arguments, an output format.

``output: text`` reads stdout as the answer. ``output: ndjson`` reads axis-eval's normalized
events, one JSON object per line (the contract is documented in ``docs/events.md``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval._util.json_text import context_text
from axis_eval.adapters._scrub import MAX_COUNT, finite_cost, scrub
from axis_eval.adapters.base import (
    AdapterConfigError,
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    AggregateMode,
    LinesMode,
    ResultContext,
    StreamContext,
    create_agent_adapter,
    flag_args,
)
from axis_eval.config.models import DeclarativeAdapter

__all__ = ["EVENT_TYPES", "declarative_adapter"]

_PLACEHOLDER = re.compile(r"\{(prompt|workspace|home|model|config_dir)\}")

EVENT_TYPES = (
    "assistant",
    "assistant_delta",
    "thinking",
    "tool_call",
    "tool_result",
    "usage",
    "result",
    "error",
    "system",
    "session",
)
"""The normalized event types an ``ndjson`` agent may print (see ``docs/events.md``)."""
_TEXT_EVENTS = ("assistant", "assistant_delta", "thinking", "system")
"""The events that carry only ``text``, each recorded by the transcript method of its name."""


def _fill(arg: str, inp: AdapterInput) -> str | None:
    """``arg`` with placeholders replaced; None drops it (``{model}`` with no model)."""
    if "{model}" in arg and inp.agent.model is None:
        return None

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "prompt":
            return inp.prompt
        if key == "workspace":
            return inp.workspace
        if key == "home":
            return inp.home
        if key == "model":
            return inp.agent.model or ""
        config_dir = inp.env.get("AXIS_CONFIG_DIR")
        if config_dir is None:
            raise AdapterConfigError("{config_dir} is unknown: AXIS_CONFIG_DIR is not set")
        return config_dir

    return _PLACEHOLDER.sub(value, arg)


def declarative_adapter(name: str, spec: DeclarativeAdapter) -> AgentAdapter[Any]:
    """Build the adapter a config's ``adapters.<name>: {command, args, …}`` entry describes.

    Raises:
        AdapterConfigError: ``prompt_via`` is ``stdin`` but ``args`` contain ``{prompt}``.
    """
    command = [spec.command] if isinstance(spec.command, str) else list(spec.command)
    args = list(spec.args)
    if spec.prompt_via == "stdin":
        if "args" not in spec.model_fields_set:
            args = []  # the default ["{prompt}"] only makes sense on the command line
        elif any("{prompt}" in a for a in args):
            raise AdapterConfigError(
                f"adapters.{name}: prompt_via is stdin, so args must not contain {{prompt}}"
            )

    def resolve_command(inp: AdapterInput) -> list[str]:
        return [a for a in (_fill(c, inp) for c in command) if a is not None]

    def build_args(inp: AdapterInput) -> list[str]:
        filled = [a for a in (_fill(arg, inp) for arg in args) if a is not None]
        return filled + flag_args(inp.agent.flags)

    make = functools.partial(
        create_agent_adapter,
        name=name,
        build_args=build_args,
        resolve_command=resolve_command,
        prompt_via=spec.prompt_via,
        required_env=spec.required_env,
    )
    if spec.output == "text":
        stream = AggregateMode(on_chunk=_text_chunk, on_end=_text_end)
        return make(initial_state=_new_chunks, stream=stream, get_result=_text_result)
    lines = LinesMode(on_line=on_event, on_end=_events_end)
    return make(initial_state=_EventState, stream=lines, get_result=_events_result)


# -- output: text ---------------------------------------------------------------------


def _new_chunks() -> list[str]:
    return []


def _text_chunk(chunk: str, ctx: StreamContext[list[str]]) -> None:
    ctx.state.append(chunk)


def _text_end(ctx: StreamContext[list[str]]) -> None:
    ctx.transcript.assistant("".join(ctx.state).strip())


def _text_result(ctx: ResultContext[list[str]]) -> AdapterResult:
    return AdapterResult(result="".join(ctx.state).strip() or None)


# -- output: ndjson -------------------------------------------------------------------


@dataclass
class _EventState:
    result: str | None = None
    last_error: str | None = None
    """The last ``error`` event's message (the only one the result needs: an agent may print
    millions)."""
    cost_usd: float | None = None
    session_id: str | None = None


_KEPT: dict[str, str] = {}
"""The warning for each kind of value :func:`scrub` replaced (see :func:`on_event`)."""


class _BadEvent(Exception):
    """An event of a known type with a missing or mistyped field."""


def _str(event: dict[str, Any], key: str, *, required: bool = True) -> str | None:
    value = event.get(key)
    if value is None and not required:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and key == "id":
        return str(value)
    if not isinstance(value, str):
        raise _BadEvent(f'"{key}" must be a string')
    return value


def _count(event: dict[str, Any], key: str) -> int:
    value = event.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _BadEvent(f'"{key}" must be a non-negative number')
    if not 0 <= value <= MAX_COUNT:  # negative, NaN, 1e400 (infinity) or absurdly large
        raise _BadEvent(f'"{key}" must be a non-negative number up to {MAX_COUNT}')
    return int(value)


def _as_text(value: Any) -> str:
    return context_text(value)  # the measure the transcript sizes tool text by


def _apply(kind: str, event: dict[str, Any], ctx: StreamContext[_EventState]) -> None:
    t = ctx.transcript
    if kind in _TEXT_EVENTS:
        text = _str(event, "text") or ""
        if kind != "system":
            ctx.feed_text(text)
        record = {
            "assistant": t.assistant,
            "assistant_delta": t.assistant_delta,
            "thinking": t.thinking,
            "system": t.system,
        }
        record[kind](text)
    elif kind == "tool_call":
        name = _str(event, "name") or "unknown"
        call_kind = _str(event, "kind", required=False)
        t.tool_call(name, event.get("input"), id=_str(event, "id", required=False), kind=call_kind)
        ctx.feed_text(_as_text(event.get("input")))
    elif kind == "tool_result":
        is_error = event.get("is_error", False)
        if not isinstance(is_error, bool):
            raise _BadEvent('"is_error" must be true or false')
        output = event.get("output")
        t.tool_result(
            _str(event, "id", required=False),
            output,
            is_error=is_error,
            name=_str(event, "name", required=False),
        )
        ctx.feed_text(_as_text(output))
    elif kind == "usage":
        usage = TokenUsage(
            input=_count(event, "input_tokens"),
            output=_count(event, "output_tokens"),
            cache_read_input=_count(event, "cache_read_input_tokens"),
            cache_write_input=_count(event, "cache_write_input_tokens"),
        )
        cost = event.get("cost_usd")
        cost_usd = None if cost is None else finite_cost(cost)
        if cost is not None and cost_usd is None:
            raise _BadEvent('"cost_usd" must be a finite non-negative number')
        t.set_usage(usage)
        if cost_usd is not None:
            ctx.state.cost_usd = cost_usd
    elif kind == "result":
        ctx.state.result = _str(event, "text")
        ctx.state.session_id = _str(event, "session_id", required=False) or ctx.state.session_id
    elif kind == "error":
        message = _str(event, "message") or "error"
        t.error(message)
        ctx.state.last_error = message
    else:  # session
        ctx.state.session_id = _str(event, "id")


def on_event(event: Any, ctx: StreamContext[_EventState]) -> None:
    """Record one normalized event; anything malformed is kept as a system entry + warning."""
    scrubbed = scrub(event)
    if problem := scrubbed.describe():  # one shared string per kind: floods stay cheap
        ctx.warn(_KEPT.setdefault(problem, f"ndjson: an event was kept with {problem}"))
    event = scrubbed.value
    kind = event.get("type") if isinstance(event, dict) else None
    if not isinstance(kind, str):
        ctx.warn('ndjson: a line is JSON but not an event object with a "type"; kept as system')
        ctx.transcript.system(_as_text(event))
        return
    if kind not in EVENT_TYPES:
        ctx.warn(f"ndjson: unknown event type {kind!r:.100}; kept as a system entry")
        ctx.transcript.system(_as_text(event))
        return
    try:
        _apply(kind, event, ctx)
    except _BadEvent as exc:
        ctx.warn(f"ndjson: a {kind!r} event is malformed ({exc}); kept as a system entry")
        ctx.transcript.system(_as_text(event))


def _events_end(ctx: StreamContext[_EventState]) -> None:
    ctx.transcript.flush()


def _events_result(ctx: ResultContext[_EventState]) -> AdapterResult:
    state = ctx.state
    result = state.result
    if result is None and ctx.exit_code == 0:
        result = ctx.transcript.last_assistant_text()
    return AdapterResult(
        result=result,
        error=state.last_error if result is None else None,
        cost_usd=state.cost_usd,
        session_id=state.session_id,
    )
