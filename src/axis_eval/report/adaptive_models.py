"""How an adaptive pair stopped (``runs: auto``): the ``adaptive`` field of a pair entry.

Kept apart from :mod:`axis_eval.report.models` (at its size limit); a format like it.
"""

from typing import Literal

from axis_eval._types import OutputModel

StopReason = Literal["target reached", "max reached", "runs failed", "run stopped"]
"""``target reached``: the interval is at most ``target`` wide; ``max reached``: ``max``
runs ran and it is still wider; ``runs failed``: fewer than 2 runs scored, no interval;
``run stopped``: the run was interrupted or hit a run limit before the pair settled."""


class AdaptiveStop(OutputModel):
    """One adaptive pair: the rule it ran under, how many runs it took and why it stopped."""

    rule: Literal["t", "hoeffding"]
    """The confidence bound (docs/statistics.md, "Adaptive repeats")."""
    min: int
    max: int
    target: float
    """The full width (upper − lower, points) the composite's interval had to reach."""
    confidence: float
    """Overall confidence, held over every look by a Bonferroni split of 1 − confidence."""
    looks: list[int]
    """The pre-registered run counts where the rule may stop: min, min + 2, …, max."""
    runs: int
    """Runs the pair took (an odd count among ``looks``)."""
    scored: int
    """Of those, the runs with a composite (the interval's sample)."""
    width: float | None = None
    """The interval's full width at the stop (None: under 2 scored runs)."""
    low: float | None = None
    high: float | None = None
    """The interval at the stop (unclipped), at the overall confidence."""
    reason: StopReason | None = None
    """Why it stopped; None while the pair is still adding runs."""
