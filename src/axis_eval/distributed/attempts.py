"""The scheduler's count of each job's starts: one round trip a job instead of four.

A job whose worker dies is started once more elsewhere; its task must know how many times it
has been started, and by whom, even when its first worker died without a word. The
scheduler sees every start, so it keeps that record: a plugin registered by ``axis run``
adds one handler, ``axis_attempt``, that a job's task calls when it begins (it appends its
worker and gets the whole list back), and drops a key's record when the key is forgotten
(``axis run`` has the outcome), so nothing is left to delete.

The scheduler has axis-eval installed anyway (it unpickles the tasks, which name our
functions); this module imports nothing else of ours, so registering it costs nothing there.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

__all__ = ["HANDLER", "PLUGIN_NAME", "AttemptsPlugin", "record_start", "register"]

PLUGIN_NAME = "axis-eval-attempts"
HANDLER = "axis_attempt"
PREFIX = "axis-job-"
"""Only the keys of axis jobs are recorded (see ``names.task_key``)."""
MAX_KEYS = 100_000
"""A bound on what the record may hold (a key is dropped when it is forgotten)."""


class AttemptsPlugin(SchedulerPlugin):
    """Which workers started each axis job's task, in order."""

    idempotent = True
    """Registered once per scheduler: the runs that share a cluster share it."""

    def __init__(self) -> None:
        self.starts: dict[str, list[str]] = {}

    async def start(self, scheduler: Any) -> None:
        scheduler.handlers[HANDLER] = self.attempt

    def attempt(self, key: str, worker: str) -> list[str]:
        """Record that ``worker`` starts ``key``; every start of it so far."""
        if key not in self.starts and len(self.starts) >= MAX_KEYS:
            self.starts.pop(next(iter(self.starts)))
        started = self.starts.setdefault(key, [])
        started.append(worker)
        return list(started)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish == "forgotten" and isinstance(key, str) and key.startswith(PREFIX):
            self.starts.pop(key, None)


async def register(client: Any) -> None:
    """Put the plugin on the client's scheduler (once: later runs find it there)."""
    await client.register_plugin(AttemptsPlugin(), name=PLUGIN_NAME)


async def record_start(key: str, worker: Any) -> list[str]:
    """On a worker, inside ``key``'s task: tell the scheduler it starts here; every start."""
    started = await worker.scheduler.axis_attempt(key=key, worker=worker.address)
    return [str(address) for address in started]
