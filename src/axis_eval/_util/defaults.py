"""Default factories for pydantic fields, chosen for import-time cost."""

from __future__ import annotations

from typing import Any


def empty_list() -> list[Any]:
    """A new empty list: ``Field(default_factory=empty_list)``.

    Not the builtin ``list`` as the factory: pydantic inspects every default factory's
    signature when a model class is created, and ``inspect.signature`` of the builtin
    ``list`` takes ~125 µs (it fails slowly) against ~6 µs for a Python function. With ~65
    such fields loaded by every ``axis run`` that is ~8 ms of its fixed cost
    (docs/benchmarks.md).
    """
    return []
