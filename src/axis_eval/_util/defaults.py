"""Default factories for pydantic fields, chosen for import-time cost."""

from __future__ import annotations

from typing import Any


def empty_list() -> list[Any]:
    """A new empty list: ``Field(default_factory=empty_list)``.

    Not the builtin ``list`` as the factory: pydantic inspects every default factory's
    signature when a model class is created, and ``inspect.signature`` of the builtin
    ``list`` fails slowly, far slower than for a Python function. Every ``axis run`` loads
    dozens of such fields, so it shows in the fixed cost (docs/benchmarks.md).
    """
    return []
