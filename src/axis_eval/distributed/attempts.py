"""The scheduler's count of each job's starts: one round trip a job instead of four.

A job whose worker dies is started once more elsewhere; its task must know how many times it
has been started, and by whom, even when its first worker died without a word. The
scheduler sees every start, so it keeps that record: a plugin registered by ``axis run``
adds one handler, ``axis_attempt``, that a job's task calls when it begins (it appends its
worker and gets the whole list back), and drops a key's record when the key is forgotten
(``axis run`` has the outcome), so nothing is left to delete.

It also keeps Dask's work stealing off axis jobs: ``axis run`` places each job on a worker
it checked (:mod:`.placement`), and a job queued there behind a busy slot must wait for
that slot, not move to a worker that joined later, unchecked, or one whose slots would let
more than ``--concurrency`` jobs run at once. A job whose worker is lost is still moved by
the scheduler itself (its restriction is loose), which stealing has no part in.

The scheduler has axis-eval installed anyway (it unpickles the tasks, which name our
functions); this module imports nothing else of ours, so registering it costs nothing there.
"""

from __future__ import annotations

import contextlib
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

__all__ = ["HANDLER", "PLUGIN_NAME", "AttemptsPlugin", "record_start", "register"]

PLUGIN_NAME = "axis-eval-attempts-2"
"""Versioned: a scheduler that kept an older plugin gets this one beside it."""
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
        self.scheduler: Any = None

    def attempt(self, key: str, worker: str) -> list[str]:
        """Record that ``worker`` starts ``key``; every start of it so far."""
        if key not in self.starts and len(self.starts) >= MAX_KEYS:
            self.starts.pop(next(iter(self.starts)))
        started = self.starts.setdefault(key, [])
        started.append(worker)
        return list(started)

    async def start(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        scheduler.handlers[HANDLER] = self.attempt

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if not (isinstance(key, str) and key.startswith(PREFIX)):
            return
        if finish == "forgotten":
            self.starts.pop(key, None)
        elif finish == "processing":
            self._not_stealable(key)

    def _not_stealable(self, key: str) -> None:
        # The stealing extension, a plugin registered before this one, has just listed
        # the task as stealable in the same transition.
        if self.scheduler is None:
            return
        stealing = getattr(self.scheduler, "extensions", {}).get("stealing")
        task = self.scheduler.tasks.get(key)
        if stealing is not None and task is not None:
            with contextlib.suppress(Exception):  # another Dask: stealing as it decides
                stealing.remove_key_from_stealable(task)


async def register(client: Any) -> None:
    """Put the plugin on the client's scheduler (once: later runs find it there)."""
    await client.register_plugin(AttemptsPlugin(), name=PLUGIN_NAME)


async def record_start(key: str, worker: Any) -> list[str]:
    """On a worker, inside ``key``'s task: tell the scheduler it starts here; every start."""
    started = await worker.scheduler.axis_attempt(key=key, worker=worker.address)
    return [str(address) for address in started]
