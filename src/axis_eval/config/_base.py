"""Shared pieces of the input models: the lenient base class and small field types.

Every number a user writes is one of the bounded types here (:class:`Bounds`): finite, above
its floor and at most a documented ceiling, because ``Infinity``, ``.inf`` or ``1e308`` in a
time limit would silently disable it (or overflow the timer). Every string is checked for
NUL and unpaired surrogates (``config/_text.py``).
"""

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from axis_eval.config._text import (
    PROMPT_FIELDS,
    TEXT_ERROR,
    check_strings,
    env_name_problem,
    folder_name_problem,
    scenario_key_problem,
)

MAX_RUNS = 19
"""The largest repeat count AXIS accepts."""

MAX_DURATION_DAYS = 7
"""The longest time limit anything takes: a week. Far beyond any real run, and small enough
that no timer overflows (``1e308`` minutes would)."""
MAX_MINUTES = MAX_DURATION_DAYS * 24 * 60
"""10 080: :data:`MAX_DURATION_DAYS` in minutes."""
MAX_SECONDS = MAX_MINUTES * 60
"""604 800: :data:`MAX_DURATION_DAYS` in seconds."""
MAX_TOKENS = 10**12
"""A trillion tokens: the largest token budget or context size. Beyond any spend, and well
inside 2**53, so every JSON reader (the HTML report's JavaScript too) reads it exactly."""
MAX_CONCURRENCY = 1000
"""The most jobs, or judge calls, at once."""
MAX_WEIGHT = 1_000_000
"""The largest weight of one judge check or scoring dimension (weights are relative)."""
MAX_REMOTE_DEPTH = 100
"""The deepest nesting of remote scenario sources."""


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


class FileRoot(InputModel):
    """Base of the top-level model of a file (a config, a scenario): checks all its text.

    No string anywhere in the file may hold NUL or an unpaired surrogate
    (``config/_text.py``). The root walks each field's raw value whole, nested objects and
    unknown keys included, so nested models need no check of their own (walking at every
    level cost a quarter of a scenario's validation).
    """

    @field_validator("*", mode="before")
    @classmethod
    def _clean_text(cls, value: Any, info: ValidationInfo) -> Any:
        """Before the field's type, so the message is ours rather than pydantic's string
        error, and one bad string fails only its own field."""
        return check_strings(value, nul=info.field_name in PROMPT_FIELDS)

    @model_validator(mode="before")
    @classmethod
    def _clean_extra(cls, data: Any) -> Any:
        """Unknown top-level keys too: they are warned about, and kept in the report's copy
        of the config."""
        if isinstance(data, dict):
            known = _field_keys(cls)
            check_strings({k: v for k, v in data.items() if k not in known})
        return data


@functools.cache
def _field_keys(model: type[BaseModel]) -> frozenset[str]:
    """A model's field names and aliases: the keys that are not unknown."""
    return frozenset(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}


def _number(value: float) -> str:
    """``10080`` → ``10,080``; small and fractional numbers as written."""
    if float(value).is_integer():
        whole = int(value)
        return f"{whole:,}" if abs(whole) >= 10_000 else str(whole)
    return repr(value)


@dataclass(frozen=True)
class Bounds:
    """A number's legal range: finite, above a floor (``gt`` or ``ge``), at most ``le``.

    Used as ``Annotated[float, Bounds(...)]``: it validates after the type and puts the
    range in the JSON Schema. :meth:`problem` is the same rule for values that do not come
    through a model (command-line options).
    """

    le: float
    """The ceiling (inclusive)."""
    gt: float | None = None
    ge: float | None = None
    note: str = ""
    """Said after the ceiling, e.g. ``" (7 days)"``."""

    def problem(self, value: float) -> str | None:
        """What a legal value is, in words (the config's "expected ..."), or None if legal."""
        if isinstance(value, float) and not math.isfinite(value):
            return f"a finite number {self.range()}"
        if self.gt is not None and not value > self.gt:
            return f"a number greater than {_number(self.gt)}"
        if self.ge is not None and not value >= self.ge:
            return f"a number of at least {_number(self.ge)}"
        if not value <= self.le:
            return f"a number of at most {_number(self.le)}{self.note}"
        return None

    def range(self) -> str:
        """``greater than 0 and at most 10,080 (7 days)``."""
        if self.gt is not None:
            floor = f"greater than {_number(self.gt)} and "
        elif self.ge is not None:
            floor = f"of at least {_number(self.ge)} and "
        else:
            floor = ""
        return f"{floor}at most {_number(self.le)}{self.note}"

    def _check(self, value: float) -> float:
        problem = self.problem(value)
        if problem is not None:
            raise PydanticCustomError("axis_number", problem)
        return value

    def _finite(self, value: Any) -> Any:
        """Before the type: NaN or infinity given to an integer field gets this message,
        not the integer parser's."""
        if isinstance(value, float) and not math.isfinite(value):
            self._check(value)
        return value

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        checked = core_schema.no_info_after_validator_function(self._check, handler(source))
        return core_schema.no_info_before_validator_function(self._finite, checked)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        if self.gt is not None:
            out["exclusiveMinimum"] = self.gt
        if self.ge is not None:
            out["minimum"] = self.ge
        out["maximum"] = self.le
        return out


_WEEK = f" ({MAX_DURATION_DAYS} days)"

Minutes = Annotated[float, Bounds(gt=0, le=MAX_MINUTES, note=_WEEK)]
"""A time limit in minutes (fractions allowed): more than 0, at most a week."""
Seconds = Annotated[float, Bounds(gt=0, le=MAX_SECONDS, note=_WEEK)]
"""A time limit in seconds: more than 0, at most a week."""
Tokens = Annotated[int, Bounds(gt=0, le=MAX_TOKENS)]
"""A token budget: a whole number (``1e5`` is fine, ``1.5`` is not), 1 to a trillion."""
Weight = Annotated[float, Bounds(ge=0, le=MAX_WEIGHT)]
"""A relative weight: 0 to a million."""
Concurrency = Annotated[int, Field(strict=True), Bounds(gt=0, le=MAX_CONCURRENCY)]
"""How many at once: a real integer (not ``true`` or ``"3"``), 1 to 1000."""


def _rule(problem_of: Callable[[str], str | None]) -> Callable[[str], str]:
    """A string validator from a ``*_problem`` function of ``config/_text.py``."""

    def check(value: str) -> str:
        problem = problem_of(value)
        if problem is not None:
            raise PydanticCustomError(TEXT_ERROR, problem)
        return value

    return check


NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
FolderName = Annotated[NonEmptyStr, AfterValidator(_rule(folder_name_problem))]
"""A name that becomes one folder of a report (an agent's name, an adapter's name)."""
ScenarioKey = Annotated[NonEmptyStr, AfterValidator(_rule(scenario_key_problem))]
"""``dir/name``: every part becomes a folder of a report."""
EnvName = Annotated[NonEmptyStr, AfterValidator(_rule(env_name_problem))]
"""An environment variable's name."""


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


RunCount = Annotated[int, Field(strict=True), AfterValidator(check_runs)]
"""A repeat count: a real integer (``true`` or ``"3"`` are not counts), odd, 1 to 19."""

Boolean = Annotated[bool, Field(strict=True)]
"""``true`` or ``false`` and nothing else: ``"yes"``, ``"true"``, ``1`` or ``0`` are errors
naming the field ("expected true or false"), as AXIS's validator rejects a non-boolean
``skip``. (YAML's own booleans are booleans: an unquoted ``yes`` is YAML 1.1's ``true``.)"""
