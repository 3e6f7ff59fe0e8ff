"""The vocabulary every stage shares: the file-format base, token usage, statuses, the score
names and the one rounding rule.

This module is the bottom of the package: it imports no stage, and every stage may import
it (``docs/architecture.md``, enforced by ``tests/test_layering.py``). Keep it to names and
tiny value types; anything with behaviour belongs to the stage that owns the behaviour.

No ``from __future__ import annotations`` here nor in the other modules of pydantic models:
pydantic would turn each string annotation into a ``typing.ForwardRef``, which compiles it,
and those compiles were ~3 % of a one-job ``axis run`` (``tests/test_layering.py`` keeps
it so).
"""

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel as _pydantic_camel

__all__ = [
    "CATEGORIES",
    "DIMENSIONS",
    "SCORES",
    "Category",
    "ErrorKind",
    "JobStatus",
    "OutputModel",
    "ReportState",
    "TokenUsage",
    "WorkspaceFile",
    "camel",
    "round_half_up",
]


def camel(name: str) -> str:
    """The one snake_case → camelCase rule (pydantic's), as the on-disk names use it.

    Plain lowercase words (every field name but a few) take a split and a join instead of
    pydantic's three regular-expression passes, which every model class pays per field at
    import; anything else (digits, odd underscores) goes to pydantic's, so the result is
    always exactly its.
    """
    words = name.split("_")
    if all(word.isalpha() and word.islower() and word.isascii() for word in words):
        return words[0] + "".join([word.capitalize() for word in words[1:]])
    return _pydantic_camel(name)


class OutputModel(BaseModel):
    """Base of every file axis-eval writes: strict, camelCase on disk, documented."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=camel,
        populate_by_name=True,
        serialize_by_alias=True,
    )


class TokenUsage(OutputModel):
    """Tokens spent: input, output, and input served from cache."""

    input: int = 0
    output: int = 0
    cache_read_input: int = 0
    cache_write_input: int = 0

    @property
    def total(self) -> int:
        """Input + output + cache reads, as AXIS counts them."""
        return self.input + self.output + self.cache_read_input

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read_input=self.cache_read_input + other.cache_read_input,
            cache_write_input=self.cache_write_input + other.cache_write_input,
        )


class WorkspaceFile(OutputModel):
    """A file collected from a job's workspace: the job's copy (``CollectedArtifact``) and the
    report's entry (``ArtifactEntry``) both start with these fields. It is here, not in either
    stage, so that reading a report does not load the job's models (and the config's)."""

    path: str
    """Path inside the workspace."""
    size_bytes: int
    mime_type: str


JobStatus = Literal["completed", "failed", "cancelled"]
"""How a run (job) ended. ``cancelled`` means unfinished: a later resume runs it again."""

ErrorKind = Literal[
    "setup",
    "spawn",
    "timeout",
    "token_limit",
    "run_limit",
    "output_limit",
    "agent",
    "cancelled",
    "internal",
    "infrastructure",
]
"""Why a run failed or stopped. ``infrastructure``: what should have run the job could not
(its sandbox or container did not start), kept apart from the agent's own failures."""

ReportState = Literal["running", "finished", "interrupted", "crashed"]
"""A report's state: ``running`` while jobs are under way; ``interrupted`` by a signal;
``crashed`` when a bug ended the run (its ``error`` says what; ``--resume`` finishes both)."""

Category = Literal["environment", "service", "agent"]
"""An interaction's category; an interaction may be in several."""

CATEGORIES: tuple[Category, ...] = ("environment", "service", "agent")
"""The categories in display order (Env, Svc, Agent)."""

DIMENSIONS: tuple[str, ...] = ("goal_achievement", *CATEGORIES)
"""The four AXIS dimensions, as :class:`ScoreResult` names its fields."""

SCORES: tuple[str, ...] = ("axis_score", *DIMENSIONS)
"""The composite and the four dimensions, as :class:`ScoreResult` names its fields."""


_NOISE_DIGITS = 9
"""Values are rounded to this many decimals before half-up rounding, so that float noise
(``84.49999999999999`` for an exact 84.5) does not change the result."""


def round_half_up(value: float) -> int:
    """Round to the nearest integer, ties toward +∞ (JavaScript's ``Math.round``, as AXIS).

    0.5 → 1, 2.5 → 3, 84.5 → 85, −0.5 → 0, −2.5 → −2, −2.6 → −3. Float noise within
    1e-9 of a tie counts as the tie (84.49999999999999 → 85).
    """
    if not math.isfinite(value):
        raise ValueError(f"cannot round {value!r}")
    value = round(value, _NOISE_DIGITS)
    floor = math.floor(value)
    return floor + 1 if value - floor >= 0.5 else floor
