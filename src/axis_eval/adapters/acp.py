"""Agent Client Protocol (ACP) agents: any CLI with an ACP mode, driven over stdio.

:func:`create_acp_adapter` is the Python counterpart of AXIS's ``createAcpBasedAdapter``:
it builds an :class:`AcpAdapter`, which says how to start the agent; the supervisor
(:mod:`axis_eval.execute.supervise`) runs it and talks to it through an ACP session
(:mod:`._acp_session`) instead of a stdout stream mode (ACP frames its own messages).
:func:`builtin_acp_adapter` turns a built-in ACP agent (``claude-sdk``, ``gemini-acp``,
``qwen-code``, ``opencode``, ``goose`` …) into one. See ``docs/acp.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval.adapters.base import (
    AdapterConfigError,
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    LinesMode,
    ResultContext,
    StreamContext,
)
from axis_eval.adapters.builtins import BuiltinAgent

__all__ = [
    "AcpAdapter",
    "ExtractUsage",
    "builtin_acp_adapter",
    "create_acp_adapter",
]

ExtractUsage = Callable[[dict[str, Any]], TokenUsage | None]
"""``(raw session/prompt result) -> TokenUsage | None``, for agents that report usage in
their own place (used when the result has no standard ``usage``)."""


def _no_args(inp: AdapterInput) -> list[str]:
    return []


def _unused_line(value: Any, ctx: StreamContext[Any]) -> None:
    """ACP adapters do not read stdout line by line; the ACP session does it all."""


def _unused_result(ctx: ResultContext[Any]) -> AdapterResult:
    return AdapterResult(result=None)


@dataclass(frozen=True)
class AcpAdapter(AgentAdapter[Any]):
    """An adapter for an agent that speaks ACP on stdio (build it with
    :func:`create_acp_adapter`).

    ``stream``, ``initial_state`` and ``get_result`` are unused placeholders: an ACP
    session (:class:`axis_eval.adapters._acp_session.AcpSession`) reads the agent: the
    handshake ``initialize`` → ``session/new`` → ``session/prompt``, granting every
    permission and serving file reads and writes, until the prompt returns.
    """

    extract_usage: ExtractUsage | None = None
    """Reads usage from the raw ``session/prompt`` result when it has no ``usage``."""
    spawn_env: Callable[[AdapterInput], dict[str, str]] | None = None
    """Variables added to the agent's environment at spawn time (e.g. a base URL taken
    from ``input.endpoint``)."""
    version: Callable[[AdapterInput], str | None] | None = None
    """The CLI's exact version for a run (recorded in the transcript); without it, or when
    it gives None, the version the agent names in its ``initialize`` answer."""


def _names(value: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise AdapterConfigError(
            f"create_acp_adapter: {what} must be a list of variable names, got {value!r}"
        )
    return tuple(value)


def _callable(value: object, what: str) -> None:
    if value is not None and not callable(value):
        raise AdapterConfigError(f"create_acp_adapter: {what} must be callable, got {value!r}")


def create_acp_adapter(
    *,
    name: str,
    command: Sequence[str],
    required_env: Sequence[str] = (),
    optional_env: Sequence[str] = (),
    isolation_env: Callable[[str, str], dict[str, str]] | None = None,
    prepare: Callable[[AdapterInput], None] | None = None,
    extract_usage: ExtractUsage | None = None,
    build_args: Callable[[AdapterInput], list[str]] | None = None,
    env: Callable[[AdapterInput], dict[str, str]] | None = None,
) -> AcpAdapter:
    """Build an adapter for any CLI with an ACP mode (AXIS's ``createAcpBasedAdapter``).

    Args:
        name: the adapter's name (the config key replaces it when loaded from ``adapters``).
        command: the argv that starts the agent in ACP mode, e.g. ``["gemini", "--acp"]``;
            an agent entry's ``command`` replaces it. The prompt is never on the command
            line: it is sent with ``session/prompt``.
        required_env: variable names checked before any job starts (and passed through).
        optional_env: variable names passed through from the parent when set.
        isolation_env: ``(workspace, home) -> variables`` set for every job.
        prepare: runs before each spawn (write config files under ``input.home``).
        extract_usage: reads token usage from the raw ``session/prompt`` result when it
            has no standard ``usage`` (Gemini's ``_meta.quota.token_count`` is read
            without it).
        build_args: arguments after ``command`` (e.g. ``--model``); none by default.
        env: ``input -> variables`` added at spawn time (e.g. a base URL from
            ``input.endpoint``).

    Raises:
        AdapterConfigError: an argument has the wrong type or value.
    """
    if not isinstance(name, str) or not name.strip():
        raise AdapterConfigError(
            f"create_acp_adapter: name must be a non-empty string, got {name!r}"
        )
    if (
        isinstance(command, str)
        or not command
        or not all(isinstance(a, str) and a for a in command)
    ):
        raise AdapterConfigError(
            f"create_acp_adapter: command must be a non-empty list of strings, got {command!r}"
        )
    for value, what in (
        (isolation_env, "isolation_env"),
        (prepare, "prepare"),
        (extract_usage, "extract_usage"),
        (build_args, "build_args"),
        (env, "env"),
    ):
        _callable(value, what)
    argv = list(command)
    return AcpAdapter(
        name=name.strip(),
        build_args=build_args or _no_args,
        initial_state=dict,
        stream=LinesMode(on_line=_unused_line),
        get_result=_unused_result,
        resolve_command=lambda inp: list(argv),
        required_env=_names(required_env, "required_env"),
        optional_env=_names(optional_env, "optional_env"),
        isolation_env=isolation_env,
        prepare=prepare,
        extract_usage=extract_usage,
        spawn_env=env,
    )


def builtin_acp_adapter(builtin: BuiltinAgent, *, require_binary: bool = True) -> AgentAdapter[Any]:
    """The adapter of a built-in ACP agent (``claude-sdk``, ``gemini-acp``, ``qwen-code`` …).

    The CLI comes from the pinned cache (``axis agents install``), else from PATH.
    ``require_binary=False`` (every agent entry sets ``command``) skips that check.

    Raises:
        PreflightError: the CLI is not installed (the message gives the install command).
        AdapterConfigError: ``builtin`` is not an ACP agent.
    """
    from axis_eval.adapters._acp_builtins import builtin_recipe

    if builtin.protocol != "acp":
        raise AdapterConfigError(f"the built-in agent {builtin.name!r} does not speak ACP")
    recipe = builtin_recipe(builtin, require_binary=require_binary)
    adapter = create_acp_adapter(
        name=builtin.name,
        command=list(builtin.command),
        required_env=builtin.required_env,
        optional_env=recipe.optional_env,
        isolation_env=recipe.isolation_env,
        prepare=recipe.prepare,
        build_args=recipe.build_args,
        env=recipe.env,
    )
    return replace(adapter, resolve_command=recipe.resolve_command, version=recipe.version)
