"""The load and CPU count of the machine a job runs on, as its outcome records them."""

from __future__ import annotations

import os
import time

MACHINE_READ_EVERY_S = 1.0
"""How long one reading serves the jobs of a run: Linux recomputes the load average every
5 s, and ``os.cpu_count()`` opens and reads a ``/sys`` file (two a job, a share of an
instant job's harness cost worth saving)."""


def read_machine() -> tuple[float | None, int | None]:
    """The 1-minute load average and the CPU count now; None for what the platform cannot
    tell."""
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # not on this platform
        load = None
    return load, os.cpu_count()


class MachineState:
    """:func:`read_machine`, read again at most every :data:`MACHINE_READ_EVERY_S` (one
    per run: nothing is kept across runs)."""

    def __init__(self) -> None:
        self._at = float("-inf")
        self._last: tuple[float | None, int | None] = (None, None)

    def read(self) -> tuple[float | None, int | None]:
        now = time.monotonic()
        if now - self._at >= MACHINE_READ_EVERY_S:
            self._last = read_machine()
            self._at = now
        return self._last
