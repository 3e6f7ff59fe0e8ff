"""A supervised run's warnings: each kind listed a few times, then counted."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["RunWarnings"]

_REPEATS_SHOWN = 10  # warnings of one kind recorded individually before being counted
_WARNINGS_SHOWN = 100


class RunWarnings:
    """The run's warnings, with repeats of one kind counted instead of listed; what a
    reader reports through (:class:`axis_eval.adapters.supervision.RunNotes`)."""

    def __init__(self, output_grew: Callable[[], None]) -> None:
        self.items: list[str] = []
        self.counts: dict[str, int] = {}
        self.output_grew = output_grew

    def warn(self, key: str, message: str) -> bool:
        """Record a warning; False once ``key`` has been recorded too often. ``key`` is
        the plural the count reads with: ``… and 5 more on_line errors``."""
        count = self.counts[key] = self.counts.get(key, 0) + 1
        if count <= _REPEATS_SHOWN:
            self.items.append(message)
        return count <= _REPEATS_SHOWN

    def render(self, extra: list[str]) -> list[str]:
        """The warnings, then ``extra`` (the adapter's own) with repeats counted."""
        out = list(self.items)
        out += [
            f"… and {n - _REPEATS_SHOWN} more {key}"
            for key, n in self.counts.items()
            if n > _REPEATS_SHOWN
        ]
        seen: dict[str, int] = {}
        for message in extra:
            seen[message] = seen.get(message, 0) + 1
        out += [m if n == 1 else f"{m} ({n} times)" for m, n in seen.items()]
        if len(out) > _WARNINGS_SHOWN:
            out = [*out[:_WARNINGS_SHOWN], f"… and {len(out) - _WARNINGS_SHOWN} more warnings"]
        return out
