"""Structured log lines (Go slog's text format, as upstream prints) and secret redaction.

Every runner module logs through :func:`event`, which redacts the message and the fields
before the record exists, so no handler can leak a secret. :func:`configure` installs a
stdout handler that prints ``time=… level=INFO msg="…" key=value`` lines and redacts
records from other packages too.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["Redactor", "configure", "event", "is_secret_name", "redactor"]

_SECRET_PARTS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE",
    }
)
_SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "APIKEY", "_KEY")
MIN_SECRET_CHARS = 6
"""Shorter values are not searched for in free text (they would mask ordinary words); the
served Task masks secret ``spec.env`` values of any length."""
_NOT_SECRETS = frozenset({"true", "false", "enabled", "disabled", "never", "always"})
MASK = "[redacted]"
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^/@\s:]*):(?P<pw>[^/@\s]+)@")


def is_secret_name(name: str) -> bool:
    """Whether a variable name looks like it holds a secret (``GEMINI_API_KEY``, ``GH_TOKEN``)."""
    upper = name.upper()
    parts = re.split(r"[^A-Z0-9]+", upper)
    return any(part in _SECRET_PARTS for part in parts) or upper.endswith(_SECRET_SUFFIXES)


class Redactor:
    """Replaces known secret values, and passwords in URLs, with ``[redacted]``."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        """Remember values to mask (too short ones are ignored)."""
        fresh = {
            v for v in values if len(v) >= MIN_SECRET_CHARS and v.lower() not in _NOT_SECRETS
        } - self._values
        if fresh:
            self._values |= fresh
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def add_environment(self, env: Mapping[str, str]) -> None:
        """Remember the values of every secret-looking variable in ``env``."""
        self.add(value for name, value in env.items() if is_secret_name(name))

    def __call__(self, text: str) -> str:
        """``text`` with every known secret and URL password masked."""
        if self._pattern is not None:
            text = self._pattern.sub(MASK, text)
        if "://" in text:
            text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
        return text


redactor = Redactor()
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
