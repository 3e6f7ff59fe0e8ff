"""What every job of a run carries to its worker besides its own spec (small, plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunTicket"]


@dataclass(frozen=True)
class RunTicket:
    """The run as a worker needs it: how to rebuild the config and the jobs' context."""

    token: str
    """The run's token (markers, sandboxes, the names in :mod:`.names`)."""
    version: str
    """``axis-eval``'s version in ``axis run`` (a worker must run the same)."""
    config: dict[str, Any]
    """The resolved config (profile and flags merged), as JSON data."""
    config_file: str
    """The config file's name, relative to the config folder."""
    config_dir: str
    """The config folder where ``axis run`` is: paths in a job's spec that start here are
    moved to the worker's copy of the bundle."""
    digest: str
    """The bundle's name."""
    grace_s: float
    score: bool
    """Run the rubric's deterministic checks on the worker (the judges run centrally)."""
    added_env: dict[str, str] = field(default_factory=dict)
    """Added to each worker's own environment (the scripted server's placeholder keys)."""
    extra_env: dict[str, str] = field(default_factory=dict)
    """Every job's extra variables (the scripted server's proxy trap)."""
    model_server_url: str | None = None
