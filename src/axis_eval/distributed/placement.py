"""Where a run's next job goes on a Dask cluster, and how many jobs it has out at once.

Dask sends a task with a resource restriction to a worker at once, where it waits for a
free slot even while another worker idles: so ``axis run`` places each job itself, on the
worker with the most room, and Dask only moves a job whose worker was lost.

Two rules keep ``--concurrency`` a global cap while the cluster changes under a run:

- **Queued behind each slot.** When the cap is at least the cluster's slots, the workers'
  slots already bound what runs, and each slot gets one more job queued behind it: it
  starts on its worker the moment the slot frees, with no round trip through the scheduler
  and ``axis run`` (a wave of short jobs otherwise waits for its results to come back
  before the next is sent). With fewer allowed than the slots, only ``axis run`` can hold
  the cap, and nothing is queued.
- **Late workers are checked first.** A worker that joins during a run gets jobs once it
  passed the same pre-flight check as the others, and, when jobs are queued, only while
  the cluster's slots stay within the cap.
"""

from __future__ import annotations

QUEUED = 2
"""Jobs placed per slot when the slots bound the running jobs (one runs, one waits)."""


class Placement:
    """A run's view of the workers it uses: their slots, and the jobs out on each."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.slots: dict[str, int] = {}
        """The checked workers still alive, with their slots."""
        self.busy: dict[str, int] = {}
        """Jobs placed on each worker and not back yet."""
        self.depth = 1
        """Jobs placed per slot (:data:`QUEUED` or 1), fixed when the run starts."""
        self.seen: set[str] = set()
        """Every worker this run has known (checked, being checked, or refused)."""

    def start(self, slots: dict[str, int]) -> None:
        """The workers pre-flight checked (those with slots): the run's first placement."""
        self.slots = {a: n for a, n in slots.items() if n > 0}
        self.seen.update(slots)
        self.depth = QUEUED if self.concurrency >= self.total else 1

    @property
    def total(self) -> int:
        """The slots of the workers in use (at least 1)."""
        return sum(self.slots.values()) or 1

    @property
    def capacity(self) -> int:
        """Jobs out at once: the running bound times the jobs placed per slot."""
        return max(1, min(self.concurrency, self.total) * self.depth)

    def place(self) -> str | None:
        """The worker with the most room for one more job (None: none has room; Dask
        decides, as for a job whose worker was lost)."""
        room = {a: n * self.depth - self.busy.get(a, 0) for a, n in self.slots.items()}
        best = max(room, key=lambda a: room[a], default=None)
        if best is None or room[best] <= 0:
            return None
        self.busy[best] = self.busy.get(best, 0) + 1
        return best

    def release(self, address: str) -> None:
        """A job placed on ``address`` is back."""
        self.busy[address] = self.busy.get(address, 0) - 1

    def refresh(self, live: dict[str, int]) -> list[str]:
        """The live workers and their slots: lost ones leave the placement; returns the
        new ones with slots, to be checked before :meth:`admit` lets them take jobs."""
        self.slots = {a: n for a, n in self.slots.items() if a in live}
        fresh = [a for a, n in live.items() if n > 0 and a not in self.seen]
        self.seen.update(live)
        return fresh

    def admit(self, address: str, slots: int) -> bool:
        """Let a late worker that passed pre-flight take jobs; False when queued jobs and
        its slots would let more than the cap run at once (it then stays unused)."""
        if self.depth > 1 and self.total + slots > self.concurrency:
            return False
        self.slots[address] = slots
        return True
