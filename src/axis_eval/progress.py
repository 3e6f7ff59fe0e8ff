"""What the engine tells a display while a run is under way (the Display protocol).

The engine never prints: it calls a :class:`Display`. The CLI picks the implementation
(a live view on a TTY, plain lines otherwise); the API default shows nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

from axis_eval.planning.models import JobSpec, Plan

if TYPE_CHECKING:
    from axis_eval.scoring.models import ScoreResult

Phase = Literal["setup", "running", "scoring", "teardown"]


class JobView(Protocol):
    """The finished job as a display sees it.

    The engine hands over the run's report entry (``RunEntry``), for a job that just ran
    and for a run a resumed report kept alike; a ``JobOutcome`` has the same members.
    """

    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def duration_ms(self) -> int: ...
    @property
    def tokens(self) -> int: ...
    @property
    def score(self) -> ScoreResult | None: ...


def usage_simulated(view: JobView) -> bool:
    """The job's usage came from the embedded scripted model server (no tokens spent).

    A ``RunEntry`` says so itself (``cost_simulated``), a ``JobOutcome`` through its
    transcript; a display shows such tokens as simulated, never as spend.
    """
    if getattr(view, "cost_simulated", False):
        return True
    transcript = getattr(view, "transcript", None)
    return bool(getattr(transcript, "cost_simulated", False))


class Display(Protocol):
    """Receives progress; implementations must be fast and never raise."""

    def start(self, plan: Plan, report_id: str) -> None:
        """The run begins."""

    def phase(self, job: JobSpec, phase: Phase) -> None:
        """A job entered a phase."""

    def tokens(self, job: JobSpec, total: int) -> None:
        """A job's live token count grew."""

    def placed(self, job: JobSpec, where: str) -> None:
        """A job runs elsewhere than this process (``where``: a Dask worker's address)."""

    def finished(self, job: JobSpec, view: JobView) -> None:
        """A job ended (completed, failed or cancelled)."""

    def message(self, text: str) -> None:
        """A log line (warnings, notes, signals)."""

    def stop(self) -> None:
        """The run is over; release the terminal."""


class NullDisplay:
    """Shows nothing (the Python API's default)."""

    def start(self, plan: Plan, report_id: str) -> None:
        return None

    def phase(self, job: JobSpec, phase: Phase) -> None:
        return None

    def tokens(self, job: JobSpec, total: int) -> None:
        return None

    def placed(self, job: JobSpec, where: str) -> None:
        return None

    def finished(self, job: JobSpec, view: JobView) -> None:
        return None

    def message(self, text: str) -> None:
        return None

    def stop(self) -> None:
        return None
