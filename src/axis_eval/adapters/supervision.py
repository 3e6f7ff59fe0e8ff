"""What the supervisor and an adapter's output reader say to each other during one run.

The supervisor (:mod:`axis_eval.execute.supervise`) starts the agent and owns everything
about the process: its pipes, limits, stderr, warnings and the run's error. An
:class:`OutputReader` is the adapter's side: it turns what the agent prints (NDJSON lines,
free text, or an ACP JSON-RPC conversation on stdin and stdout) into the transcript, and
says at the end how the agent ended (:class:`Reading`); on the way it reports warnings and
output growth through :class:`RunNotes`. Nothing here touches a process.

The message helpers (:func:`exit_message`, :func:`stderr_tail`) live here, below both
sides, because the supervisor words a stream agent's ending with them and the ACP session
words a broken conversation with them: one wording for both.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "NOT_JSON",
    "OutputReader",
    "Reading",
    "RunNotes",
    "describe",
    "exit_message",
    "stderr_tail",
]

NOT_JSON = "stdout lines that are not JSON"
"""The warning key of stdout lines a reader could not parse (named in "no output" errors)."""
_TAIL_CHARS = 2000


class RunNotes(Protocol):
    """What a reader reports to the supervisor while the agent runs."""

    def warn(self, key: str, message: str) -> bool:
        """Record a warning; False once ``key`` was recorded too often (say less, then).

        ``key`` names this kind of warning in the plural, as the count of the ones left
        out reads: ``… and 5 more {key}`` (``on_line errors``, ``update warnings``).
        """

    def output_grew(self) -> None:
        """New output was read: the supervisor re-checks the token limit."""


@dataclass
class Reading:
    """What the reader concluded once the agent was done (or stopped); the answer itself is
    the finished transcript's ``result``."""

    error: str | None = None
    """An error the agent reported (or its output could not be read); it fails the run."""
    answered: bool = False
    """The agent answered over its protocol and was then told to exit, so its exit code
    says nothing: the run's exit code is 0, or 1 when the run failed (ACP, as AXIS)."""
    warnings: list[str] = field(default_factory=list)
    """The adapter's own notes (``StreamContext.warn``), repeated ones counted."""


class OutputReader(Protocol):
    """An adapter's reader for one run (:func:`axis_eval.adapters.readers.open_reader`)."""

    converses: bool
    """True when the reader talks to the agent on stdin (ACP): stdin stays an open pipe,
    and once :meth:`read` returns the run is over (the agent is told to exit)."""
    raw_output: list[str]
    """What the agent printed, as the run's ``raw_output`` keeps it."""

    def stdin_data(self) -> bytes | None:
        """Bytes written to stdin, which is then closed (the prompt with ``prompt_via=
        'stdin'``); None for /dev/null, or for a conversing reader."""

    def spawn_env(self) -> dict[str, str]:
        """Variables added to the agent's environment after ``prepare``."""

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        """Read stdout to its end (or, conversing, until the agent has answered)."""

    def live_tokens(self) -> int:
        """The live token count: the estimate, or the usage reported so far if larger."""

    async def close(self) -> None:
        """Release what :meth:`read` opened; called once the agent was stopped, always."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Finish the transcript (its ``result`` is the answer) and say how the agent ended;
        ``stopped``: a limit or a cancel ended the run (its error is already decided)."""


def describe(exc: BaseException) -> str:
    """``TypeError: first line of the message``, for warnings and errors."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def stderr_tail(stderr: str) -> str | None:
    """The last non-empty stderr lines, at most 2000 characters."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    picked: list[str] = []
    size = 0
    for line in reversed(lines):
        if picked and size + len(line) + 1 > _TAIL_CHARS:
            break
        picked.append(line[-_TAIL_CHARS:])
        size += len(picked[-1]) + 1
    return "\n".join(reversed(picked)) or None


def exit_message(code: int | None) -> str:
    """``Agent process exited with non-zero code 3`` / ``… was killed by SIGKILL``."""
    if code is None:
        return "Agent process did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Agent process was killed by {name}"
    return f"Agent process exited with non-zero code {code}"
