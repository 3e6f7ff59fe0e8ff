"""The one timestamp format of the run files: UTC, milliseconds, a ``Z`` suffix."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now_iso"]


def now_iso() -> str:
    """The time now as the run files write it: ``2026-01-31T12:00:00.000Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
