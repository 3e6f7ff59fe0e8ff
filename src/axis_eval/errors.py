"""The exception tree and the exit codes every command ends with.

::

    AxisError                   base: message, hint, exit_code
    ├─ UsageError        2      bad flags or arguments
    ├─ ConfigError       2      a config or scenario file: file, field path, expected, found
    ├─ PreflightError    2      a missing CLI, key or environment variable, before any spend
    ├─ ReportNotFound    1      `axis reports ID` for an id that does not exist
    ├─ JobError                 never escapes a job: kept in the job's result, with its kind
    ├─ RunCrashed        3      a bug ended ``axis run``; its report is closed ``crashed``
    └─ Interrupted   130/143    SIGINT / SIGTERM

Exceptions carry exit codes 2, 3, 130 and 143. Outcomes (0 and 1) are computed from the
report by :func:`axis_eval.report.outcome.exit_code_for`. Only the CLI (``cli/_common.fail``)
turns an ``AxisError`` into a message and an exit code; anything else is a bug: the CLI's
entry point says so in one paragraph, exits 3 and writes the traceback to a file
(``cli/_common.internal_error``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_USAGE",
    "AxisError",
    "ConfigError",
    "FieldProblem",
    "Interrupted",
    "PreflightError",
    "ReportNotFound",
    "UsageError",
    "one_line",
    "one_line_text",
]

EXIT_OK = 0
"""Every pair completed."""
EXIT_FAILED = 1
"""A pair failed (no run of it succeeded), scenarios failed to load, or a regression."""
EXIT_USAGE = 2
"""Bad flags, a bad config or scenario, or a failed pre-flight check."""
EXIT_INTERNAL = 3
"""A bug in axis-eval ended the command (an internal error, never the user's input)."""
EXIT_SIGINT = 130
"""Interrupted by SIGINT (Ctrl-C)."""
EXIT_SIGTERM = 143
"""Interrupted by SIGTERM."""


class AxisError(Exception):
    """Base of every error axis-eval raises on purpose.

    Attributes:
        message: one line saying what went wrong.
        hint: an optional line saying what to do about it.
        exit_code: the process exit code when this error ends a command.
    """

    exit_code: int = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        """The text shown to a user: the message, then the hint if any."""
        text = self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UsageError(AxisError):
    """Raised for bad command-line flags or arguments."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class FieldProblem:
    """One problem in a file: where (a field path such as ``agents[1].model``) and what."""

    path: str
    expected: str
    found: str | None = None

    def render(self) -> str:
        where = self.path or "(top level)"
        text = f"{where}: expected {self.expected}"
        if self.found is not None:
            text += f", found {self.found}"
        return text


class ConfigError(AxisError):
    """Raised when a config or scenario file cannot be used.

    Carries the file and one :class:`FieldProblem` per problem found, so the message
    names the file, each field path, what was expected and what was found.
    """

    exit_code = EXIT_USAGE

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        problems: list[FieldProblem] | None = None,
        hint: str | None = None,
    ) -> None:
        self.file = file
        self.problems = list(problems or [])
        full = message
        if file:
            full = f"{message} ({file})" if not message.endswith(file) else message
        if self.problems:
            full += "".join(f"\n  - {p.render()}" for p in self.problems)
        super().__init__(full, hint=hint)


class PreflightError(AxisError):
    """Raised before any job starts: a missing agent CLI, API key or environment variable."""

    exit_code = EXIT_USAGE


class ReportNotFound(AxisError):
    """Raised when a report id names no report on disk."""

    exit_code = EXIT_FAILED


class Interrupted(AxisError):
    """Raised when a signal ended the command; the exit code says which signal."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.exit_code = EXIT_SIGTERM if signal_name == "SIGTERM" else EXIT_SIGINT


_ERROR_CHARS = 500
"""The longest one-line error a report or the terminal shows (a crash's ``error``)."""


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line, at most ``_ERROR_CHARS`` long; a group of one is
    unwrapped (a task group raises the failing task's error inside one)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return one_line_text(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def one_line_text(text: str) -> str:
    """``text`` on one line (whitespace runs made one space), cut to ``_ERROR_CHARS``."""
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
