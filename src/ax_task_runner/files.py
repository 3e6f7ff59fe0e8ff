"""Atomic file writes for markers and agent configuration files, readable by default.

The writing itself is :mod:`axis_eval.files` (one atomic writer for both packages; it
imports the standard library only, so loading it at start-up is cheap). The runner's
markers and state default to 0644: the task's own user reads them.
"""

from __future__ import annotations

from pathlib import Path

from axis_eval.files import atomic_write_text

__all__ = ["write_atomic"]


def write_atomic(path: Path, text: str, *, mode: int = 0o644, durable: bool = False) -> None:
    """Write ``text`` through a temporary file and a rename; ``durable`` adds fsyncs."""
    atomic_write_text(path, text, durable=durable, mode=mode)
