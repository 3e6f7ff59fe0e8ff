"""The runner's option variables and the values they take: standard library only.

:mod:`ax_task_runner.config` (the pydantic ``RunnerConfig``) re-exports all of this; it
lives apart so the command line and ``--guest-services-only`` (:mod:`.guest_only`) read
flags and variables without loading pydantic.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ENV_OPTIONS", "options_from_env", "parse_go_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}
_UNITS["h"] = 3600.0
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration (``90s``, ``10m``, ``1h30m``, ``1.5h``; ``0`` alone).

    Raises:
        ValueError: not Go duration syntax (a bare number other than 0 needs a unit).
    """
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s.lstrip("+-")
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(s):
        part = _PART.match(s, pos)
        if part is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(part[1]) * _UNITS[part[2]]
        pos = part.end()
    return sign * total


def _seconds(text: str) -> float:
    """A Go duration, or a plain number of seconds (our own options accept both)."""
    try:
        return float(text)
    except ValueError:
        return parse_go_duration(text)


def _paths(text: str) -> list[str]:
    """A list of paths joined with ``:`` (as ``PATH``)."""
    return [p for p in text.split(os.pathsep) if p]


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


ENV_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "AX_RUNNER_HOST": ("host", str),
    "AX_RUNNER_PORT": ("port", int),
    "AX_RUNNER_UNIX_SOCKET": ("unix_socket", str),
    "AX_RUNNER_FILES_ROOT": ("files_roots", _paths),
    "AX_RUNNER_CONFINE_FILES": ("confine_files", _flag),
    "AX_RUNNER_GUEST_ENV": ("guest_env", str),
    "AX_RUNNER_WORKSPACE_ROOT": ("workspace_root", str),
    "AX_RUNNER_STATE_DIR": ("state_dir", str),
    "AX_RUNNER_READINESS": ("readiness", str),
    "AX_RUNNER_STOP_GRACE": ("stop_grace_s", _seconds),
    "AX_GOAL_AGENT": ("goal_agent", str),
    "AX_GOAL_MODEL": ("goal_model", str),
    "AX_MODEL_BASE_URL": ("goal_endpoint", str),
    "AX_BOOTSTRAP_TIMEOUT": ("bootstrap_timeout_s", parse_go_duration),
    "AX_RUNNER_GIT_ATTEMPTS": ("git_attempts", int),
    "AX_RUNNER_GIT_RETRY_DELAY": ("git_retry_delay_s", _seconds),
}
"""Variable → (RunnerConfig field, parser)."""


def options_from_env(environ: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """RunnerConfig fields set by variables, and warnings for values that cannot be read.

    An unreadable value keeps the default, with a warning (``AX_BOOTSTRAP_TIMEOUT`` at or
    below zero too, as upstream does).
    """
    out: dict[str, Any] = {}
    warnings: list[str] = []
    for variable, (name, parse) in ENV_OPTIONS.items():
        raw = environ.get(variable, "").strip()
        if not raw:
            continue
        try:
            value = parse(raw)
        except ValueError:
            warnings.append(f"{variable}={raw!r} cannot be read; using the default")
            continue
        if name == "bootstrap_timeout_s" and value <= 0:
            warnings.append(f"{variable}={raw!r} is not positive; using the default")
            continue
        out[name] = value
    return out, warnings
