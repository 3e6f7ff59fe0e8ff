"""What an agent adapter is: how to start an agent CLI and how to read what it prints.

An :class:`AgentAdapter` is data plus a few callbacks. It never spawns anything itself;
the supervisor (:func:`axis_eval.execute.supervise.run_agent`) starts the process, feeds
its output to the adapter's stream callbacks (:mod:`.streams`) and asks
:attr:`AgentAdapter.get_result` for the answer. Build one with
:func:`create_agent_adapter`, the Python counterpart of AXIS's ``createAgentAdapter``.
Nothing here does I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from axis_eval._types import TokenUsage
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.config.actions import McpServer
from axis_eval.errors import EXIT_USAGE, AxisError
from axis_eval.planning.models import AgentSpec

__all__ = [
    "CHARS_PER_TOKEN",
    "AdapterConfigError",
    "AdapterInput",
    "AdapterResult",
    "AgentAdapter",
    "AggregateMode",
    "LinesMode",
    "PromptVia",
    "ResultContext",
    "StreamContext",
    "command_line",
    "create_agent_adapter",
    "flag_args",
    "resolve_argv_prefix",
]

S = TypeVar("S")

PromptVia = Literal["argv", "stdin"]

CHARS_PER_TOKEN = 5
"""The live token estimate is ``ceil(characters / 5)``, as AXIS counts."""


class AdapterConfigError(AxisError):
    """An adapter is malformed, or cannot say what to spawn for a job."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class AdapterInput:
    """Everything an adapter may use to build the command line of one job."""

    prompt: str
    agent: AgentSpec
    """The configured agent: model, flags, command override, skills."""
    workspace: str
    """The agent's working directory (absolute)."""
    home: str
    """The per-job HOME, a sibling of the workspace (absolute)."""
    env: dict[str, str]
    """The agent's whole environment (already filtered and isolated)."""
    mcp_servers: dict[str, McpServer] = field(default_factory=dict)
    skills: list[str] = field(default_factory=list)
    time_limit_s: float = 15 * 60.0
    endpoint: str | None = None
    """The model API base URL to use: the agent entry's ``endpoint``, else the embedded
    scripted model server's URL when one runs, else None (the CLI's own default or its
    base-URL variable when passed through)."""


MAX_KEPT_WARNINGS = 1_000
"""Warnings one run's stream keeps (the report shows at most 100 of them, repeats counted)."""


class StreamContext(Generic[S]):
    """What stream callbacks get: the adapter's state, the transcript, a token estimate."""

    def __init__(self, state: S, transcript: TranscriptBuilder) -> None:
        self.state = state
        self.transcript = transcript
        self.chars = 0
        """Characters fed to :meth:`feed_text` so far."""
        self.warnings: list[str] = []
        """Notes for the run's ``warnings`` (use :meth:`warn`): the first
        :data:`MAX_KEPT_WARNINGS`; past them :meth:`warn` only counts (``warnings_dropped``)."""
        self.warnings_dropped = 0

    def feed_text(self, text: str) -> None:
        """Count text the agent produced or read, for the live token estimate."""
        self.chars += len(text)

    @property
    def estimated_tokens(self) -> int:
        """``ceil(chars / 5)``: the live estimate until the agent reports real usage."""
        return math.ceil(self.chars / CHARS_PER_TOKEN)

    def warn(self, message: str) -> None:
        """Record something odd about the agent's output without failing the run.

        An agent can print millions of malformed events under its output cap; past the
        first :data:`MAX_KEPT_WARNINGS` a warning is counted, not kept, so memory stays flat.
        """
        if len(self.warnings) < MAX_KEPT_WARNINGS:
            self.warnings.append(message)
        else:
            self.warnings_dropped += 1

    def kept_warnings(self) -> list[str]:
        """The warnings kept, then how many were only counted (if any)."""
        if not self.warnings_dropped:
            return self.warnings
        return [*self.warnings, f"… and {self.warnings_dropped:,} more warnings (not kept)"]


@dataclass(frozen=True)
class LinesMode(Generic[S]):
    """NDJSON output: each non-blank stdout line is parsed as JSON and given to ``on_line``.

    Lines that are not JSON are kept in the raw output and reported as warnings; they never
    reach ``on_line``. ``on_end`` runs once after the output ends (also after a time limit).
    """

    on_line: Callable[[Any, StreamContext[S]], None]
    on_end: Callable[[StreamContext[S]], None] | None = None


@dataclass(frozen=True)
class AggregateMode(Generic[S]):
    """Free-form output: stdout is decoded as UTF-8 and given to ``on_chunk`` piece by piece.

    Every chunk also counts towards the live token estimate. ``on_end`` runs once at the end.
    """

    on_chunk: Callable[[str, StreamContext[S]], None]
    on_end: Callable[[StreamContext[S]], None] | None = None


@dataclass
class ResultContext(Generic[S]):
    """What ``get_result`` gets once the agent has exited (or was stopped)."""

    state: S
    transcript: TranscriptBuilder
    exit_code: int | None
    """A negative signal number when a signal ended the agent."""
    stderr: str
    """The tail of stderr (at most 100,000 bytes)."""
    started_at: str
    ended_at: str


@dataclass
class AdapterResult:
    """The answer an adapter reads from the agent's output."""

    result: str | None
    """The final answer; None when the agent gave none."""
    error: str | None = None
    """An error the agent reported; it fails the run even when there is a result."""
    usage: TokenUsage | None = None
    """Cumulative token usage; None keeps what the stream callbacks recorded."""
    cost_usd: float | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class AgentAdapter(Generic[S]):
    """How to run one kind of agent CLI and read its output (see :func:`create_agent_adapter`)."""

    name: str
    build_args: Callable[[AdapterInput], list[str]]
    """Arguments after the command (with the prompt, unless ``prompt_via`` is ``stdin``)."""
    initial_state: Callable[[], S]
    """A fresh state object for each run, shared by the stream callbacks and ``get_result``."""
    stream: LinesMode[S] | AggregateMode[S]
    get_result: Callable[[ResultContext[S]], AdapterResult]
    resolve_command: Callable[[AdapterInput], list[str]] | None = None
    """The default argv prefix; the agent entry's ``command`` replaces it when set."""
    prompt_via: PromptVia = "argv"
    required_env: tuple[str, ...] = ()
    """Variables of which one must be set before any job starts (checked at pre-flight)."""
    optional_env: tuple[str, ...] = ()
    """Variables passed through from the parent when set (e.g. the CLI's base-URL variable)."""
    isolation_env: Callable[[str, str], dict[str, str]] | None = None
    """``(workspace, home) -> variables`` set for every job, e.g. a config dir under HOME."""
    prepare: Callable[[AdapterInput], None] | None = None
    """Runs before the spawn, e.g. to write MCP config files under HOME."""


def resolve_argv_prefix(adapter: AgentAdapter[Any], inp: AdapterInput) -> list[str]:
    """The command to spawn: the agent entry's ``command``, else ``resolve_command(inp)``.

    A ``command`` in the config always wins, as its documentation promises ("to spawn
    instead of the adapter's default"); ``resolve_command`` gives that default.

    Raises:
        AdapterConfigError: neither gives a non-empty list of strings.
    """
    prefix: list[str] | None = inp.agent.command
    if not prefix and adapter.resolve_command is not None:
        prefix = adapter.resolve_command(inp)
    if not prefix:
        raise AdapterConfigError(
            f"The {adapter.name} adapter has no command to spawn",
            hint="set `command` on the agent entry, or give the adapter a resolve_command",
        )
    _check_strings(prefix, f"{adapter.name}: resolve_command")
    return list(prefix)


def flag_args(flags: Mapping[str, str | bool]) -> list[str]:
    """Agent ``flags``: true → ``--k``, a string → ``--k value``, false → nothing."""
    out: list[str] = []
    for key, value in flags.items():
        flag = key if key.startswith("-") else f"--{key}"
        if value is True:
            out.append(flag)
        elif isinstance(value, str):
            out += [flag, value]
    return out


def command_line(adapter: AgentAdapter[Any], inp: AdapterInput) -> list[str]:
    """The whole argv of one run: :func:`resolve_argv_prefix`, then ``build_args(inp)``.

    Raises:
        AdapterConfigError: either part is not a list of strings.
    """
    argv = resolve_argv_prefix(adapter, inp)
    args = adapter.build_args(inp)
    _check_strings(args, f"{adapter.name}: build_args")
    return argv + list(args)


def _check_strings(value: object, what: str) -> None:
    if not isinstance(value, list | tuple) or not all(isinstance(a, str) for a in value):
        raise AdapterConfigError(f"{what} must return a list of strings, got {value!r:.200}")


def _check_callable(value: object, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not callable(value):
        raise AdapterConfigError(f"create_agent_adapter: {what} must be callable, got {value!r}")


def create_agent_adapter(
    *,
    name: str,
    build_args: Callable[[AdapterInput], list[str]],
    initial_state: Callable[[], S],
    stream: LinesMode[S] | AggregateMode[S],
    get_result: Callable[[ResultContext[S]], AdapterResult],
    resolve_command: Callable[[AdapterInput], list[str]] | None = None,
    prompt_via: PromptVia = "argv",
    required_env: Sequence[str] = (),
    optional_env: Sequence[str] = (),
    isolation_env: Callable[[str, str], dict[str, str]] | None = None,
    prepare: Callable[[AdapterInput], None] | None = None,
) -> AgentAdapter[S]:
    """Build an adapter for an agent CLI that prints NDJSON (lines) or plain text (aggregate).

    Args:
        name: the adapter's name (the config key replaces it when loaded from ``adapters``).
        build_args: arguments after the command; holds the prompt unless ``prompt_via`` is
            ``"stdin"``.
        initial_state: returns a fresh state object per run.
        stream: :class:`LinesMode` or :class:`AggregateMode` with the callbacks.
        get_result: reads the answer, usage and errors once the agent is done.
        resolve_command: the default argv prefix; an agent entry's ``command`` replaces it.
        prompt_via: ``"argv"`` or ``"stdin"`` (the prompt is written to stdin, then closed).
        required_env: variable names checked before any job starts.
        optional_env: variable names passed through from the parent when set.
        isolation_env: ``(workspace, home) -> variables`` set for every job.
        prepare: runs before each spawn (write config files under ``input.home``).

    Raises:
        AdapterConfigError: an argument has the wrong type or value.
    """
    if not isinstance(name, str) or not name.strip():
        raise AdapterConfigError(
            f"create_agent_adapter: name must be a non-empty string, got {name!r}"
        )
    _check_callable(build_args, "build_args")
    _check_callable(initial_state, "initial_state")
    _check_callable(get_result, "get_result")
    _check_callable(resolve_command, "resolve_command", optional=True)
    _check_callable(isolation_env, "isolation_env", optional=True)
    _check_callable(prepare, "prepare", optional=True)
    if not isinstance(stream, LinesMode | AggregateMode):
        raise AdapterConfigError(
            f"create_agent_adapter: stream must be LinesMode(...) or AggregateMode(...), "
            f"got {stream!r:.100}"
        )
    if prompt_via not in ("argv", "stdin"):
        raise AdapterConfigError(
            f"create_agent_adapter: prompt_via must be 'argv' or 'stdin', got {prompt_via!r}"
        )
    if isinstance(required_env, str) or not all(isinstance(v, str) and v for v in required_env):
        raise AdapterConfigError(
            "create_agent_adapter: required_env must be a list of variable names, "
            f"got {required_env!r}"
        )
    return AgentAdapter(
        name=name.strip(),
        build_args=build_args,
        initial_state=initial_state,
        stream=stream,
        get_result=get_result,
        resolve_command=resolve_command,
        prompt_via=prompt_via,
        required_env=tuple(required_env),
        optional_env=tuple(optional_env),
        isolation_env=isolation_env,
        prepare=prepare,
    )
