"""The machine's state as part of the measurement: a pair's runs whose speed signals were
scored while the load average exceeded the CPU count (docs/statistics.md)."""

from __future__ import annotations

from collections.abc import Sequence

from axis_eval.report.models import RunEntry

_SHORT = {"environment": "Env", "service": "Svc", "agent": "Agent"}


def speed_scored(run: RunEntry) -> list[str]:
    """The categories (``Env``, ``Svc``, ``Agent``) whose speed signal the run's score timed:
    a scored, not withheld run with interactions in them."""
    score = run.score
    if run.status != "completed" or score is None or score.withheld:
        return []
    return [_SHORT[c] for c, cat in score.categories.items() if cat.interactions and c in _SHORT]


def run_load_warning(run: RunEntry) -> str | None:
    """``load 5.2 on 2 cores during run #1: Env/Svc speed signals are inflated`` (None: the
    machine kept up, its load is unknown, or no speed signal was scored)."""
    machine = run.machine
    if machine is None or not machine.overloaded:
        return None
    timed = speed_scored(run)
    if not timed:
        return None
    loads = [v for v in (machine.load_start, machine.load_end) if v is not None]
    cpus = [v for v in (machine.cpus_start, machine.cpus_end) if v is not None]
    return (
        f"load {max(loads):.1f} on {min(cpus)} cores during run #{run.run_index}: "
        f"{'/'.join(timed)} speed signals are inflated (slow timings measure the machine)"
    )


def load_warning(runs: Sequence[RunEntry]) -> str | None:
    """Every overloaded, speed-scored run of a pair, one per line (None: none)."""
    lines = [w for r in runs if (w := run_load_warning(r)) is not None]
    return "\n".join(lines) or None
