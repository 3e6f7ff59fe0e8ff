"""The names a run uses on the cluster, one place for both sides (they must agree)."""

from __future__ import annotations

__all__ = ["events", "stop_event", "stop_reason", "task_key"]


def stop_event(token: str) -> str:
    """A ``distributed.Event``: set when the run stops (every worker stops its jobs)."""
    return f"axis-stop-{token}"


def stop_reason(token: str) -> str:
    """A ``distributed.Variable``: why it stopped (``{"reason": ..., "kind": ...}``)."""
    return f"axis-stop-reason-{token}"


def events(token: str) -> str:
    """The event topic workers report phases and token counts on."""
    return f"axis-events-{token}"


def task_key(token: str, number: int) -> str:
    """The Dask key of job ``number``'s task (the dashboard shows it)."""
    return f"axis-job-{number}-{token}"
