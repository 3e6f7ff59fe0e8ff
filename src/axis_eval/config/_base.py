"""Shared pieces of the input models: the lenient base class and small field types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StringConstraints

MAX_RUNS = 19
"""The largest repeat count AXIS accepts."""


class InputModel(BaseModel):
    """Base of every model read from a user's file.

    Inputs are lenient: unknown keys are kept in ``model_extra`` so the loader can warn
    about them with a "did you mean" hint instead of failing.
    """

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        frozen=False,
    )


NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
PositiveMinutes = Annotated[float, Field(gt=0)]
PositiveTokens = Annotated[int, Field(gt=0, strict=False)]
RunCount = Annotated[int, Field(strict=True)]
"""A repeat count: a real integer (``true`` or ``"3"`` are not counts)."""


def by_kind(
    error_type: str, expected: str, *kinds: tuple[type | tuple[type, ...], str]
) -> Discriminator:
    """A union's discriminator that tags a value by its Python type.

    ``kinds`` are ``(type, tag)`` pairs, tried in order; a value of no listed type fails
    with ``expected`` (what the field takes, in words) under ``error_type``. The config's
    error messages name the field and say ``expected`` instead of one error per member.
    """

    def tag(value: Any) -> str | None:
        return next((name for kind, name in kinds if isinstance(value, kind)), None)

    return Discriminator(tag, custom_error_type=error_type, custom_error_message=expected)


def by_field(error_type: str, expected: str, field: str, names: tuple[str, ...]) -> Discriminator:
    """A union's discriminator that tags a value by one field (``action``, ``type``).

    The tag is ``<name>`` for a known name; anything else fails with ``expected``.
    """

    def tag(value: Any) -> str | None:
        name = value.get(field) if isinstance(value, dict) else getattr(value, field, None)
        return f"<{name}>" if name in names else None

    return Discriminator(tag, custom_error_type=error_type, custom_error_message=expected)


def nearest_legal_runs(value: int) -> list[int]:
    """The odd counts in 1..MAX_RUNS nearest to an illegal ``value``."""
    if value < 1:
        return [1]
    if value > MAX_RUNS:
        return [MAX_RUNS]
    return [n for n in (value - 1, value + 1) if 1 <= n <= MAX_RUNS and n % 2 == 1]


def check_runs(value: Any) -> Any:
    """Validate a repeat count: odd, 1..19; an even value names the nearest legal ones."""
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return value
    if value % 2 == 1 and 1 <= value <= MAX_RUNS:
        return value
    options = " or ".join(str(n) for n in nearest_legal_runs(value))
    raise ValueError(
        f"an odd run count from 1 to {MAX_RUNS} (nearest legal: {options}); "
        "even counts are rejected, never rounded, because their median belongs to no run"
    )
