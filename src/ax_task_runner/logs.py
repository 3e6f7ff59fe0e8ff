"""Structured log lines (Go slog's text format, as upstream prints), redacted.

Every runner module logs through :func:`event`, which redacts the message and the fields
before the record exists, so no handler can leak a secret. :func:`configure` installs a
stdout handler that prints ``time=… level=INFO msg="…" key=value`` lines and redacts
records from other packages too.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# One redactor class for the harness and the runner, with the runner's own rule (whole
# words, values of 6+ characters: it learns its whole environment). Loaded at start-up on
# purpose: it imports the standard library only (tests/task_runner/test_layout.py keeps it so).
from axis_eval.redact import RUNNER, Redactor, runner_secret_name as is_secret_name

__all__ = ["Redactor", "configure", "event", "is_secret_name", "redactor"]

redactor = Redactor(rule=RUNNER)
"""The process-wide redactor: the runner adds the environment's and ``spec.env``'s secrets."""


def _text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + " ".join(str(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _render(value: Any) -> str:
    """slog's quoting: bare when the text has no space, quote, ``=`` or control character."""
    text = _text(value)
    if text == "" or re.search(r'[\s"=\\]', text) or not text.isprintable():
        escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return text


def _fields_text(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={_render(value)}" for key, value in fields.items())


def event(logger: logging.Logger, level: int, message: str, **fields: Any) -> None:
    """Log ``message`` with ``key=value`` fields, redacted before anything sees them."""
    if not logger.isEnabledFor(level):
        return
    clean = {k: v if isinstance(v, int | bool) else redactor(_text(v)) for k, v in fields.items()}
    text = redactor(message)
    line = f"{text} {_fields_text(clean)}" if clean else text
    logger.log(level, "%s", line, extra={"ax_message": text, "ax_fields": clean})


_LEVELS = {logging.WARNING: "WARN", logging.CRITICAL: "ERROR"}


class SlogFormatter(logging.Formatter):
    """``time=2026-01-02T03:04:05.678Z level=INFO msg="…" key=value``, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        level = _LEVELS.get(record.levelno, record.levelname)
        message = getattr(record, "ax_message", None)
        fields: Mapping[str, Any] = getattr(record, "ax_fields", None) or {}
        if message is None:
            message = record.getMessage()
            if record.exc_info:
                message += "\n" + self.formatException(record.exc_info)
            if record.name and not record.name.startswith("ax_task_runner"):
                fields = {"logger": record.name}
        line = f"time={stamp.replace('+00:00', 'Z')} level={level} msg={_render(message)}"
        if fields:
            line += " " + _fields_text(fields)
        return redactor(line)


def configure(level: int = logging.INFO) -> None:
    """Send every log record to stdout as one redacted slog line (the console script)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(SlogFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
