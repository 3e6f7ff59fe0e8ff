"""Two transcripts aligned step by step (pure): which steps are the same, changed or one-sided.

A *step* is one transcript entry (a tool call, assistant text, thinking, a user or system
message, an error). Its match key is its type and, for a tool call, the tool's name and its
input as canonical JSON (keys sorted, compact; the whitespace of command strings collapsed);
for text, the whitespace-collapsed text. Its *loose* key is the type and the tool's name
only: two steps with equal loose keys but different keys are the same tool called with a
different input (or a message with other words), a ``changed`` pair.

The alignment is a weighted longest common subsequence (Needleman–Wunsch with gap 0): an
exact match scores 3, a loose match 1, so a changed pair ranks between a match and two
gaps. The common prefix and suffix are peeled off first (same runs cost O(n)); the middle
costs O(n·m) time and n·m bytes of traceback. Past :data:`MAX_CELLS` cells the alignment
falls back to a greedy walk with a bounded look-ahead (:data:`LOOKAHEAD`) and says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from axis_eval.transcript.models import Entry, EntryType, Transcript

Relation = Literal["same", "changed", "only-left", "only-right"]

MAX_CELLS = 2_000 * 2_000
"""Largest middle part (steps left × steps right) aligned exactly."""

LOOKAHEAD = 64
"""How far the greedy fallback looks ahead for a step's match."""

EXACT_SCORE = 3
LOOSE_SCORE = 1

_COMMAND_KEYS = frozenset({"command", "cmd", "commands", "script"})
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Step:
    """One transcript entry as a step of the alignment."""

    index: int
    """Position among its transcript's steps (0-based)."""
    entry_index: int
    """Index of the entry in ``Transcript.entries``."""
    kind: EntryType
    tool: str | None
    """The tool's name for a tool call, else None."""
    key: str
    loose_key: str
    entry: Entry


@dataclass(frozen=True)
class Row:
    """One aligned row: a step of each side (or of one side) and how they relate."""

    left: Step | None
    right: Step | None
    relation: Relation


@dataclass(frozen=True)
class Alignment:
    """The rows in order, the first row that is not ``same``, and how it was computed."""

    rows: tuple[Row, ...]
    first_divergence: int | None
    """Index into ``rows`` of the first row that is not ``same``; None when all are."""
    method: Literal["exact", "greedy"] = "exact"
    note: str | None = None
    """Set when the fallback was used (the transcripts were too long to align exactly)."""


def _collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _normalize(value: Any, command: bool = False) -> Any:
    """``value`` with command strings' whitespace collapsed (recursively)."""
    if isinstance(value, str):
        return _collapse(value) if command else value
    if isinstance(value, dict):
        return {str(k): _normalize(v, command or str(k) in _COMMAND_KEYS) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v, command) for v in value]
    return value


def input_key(tool_input: Any) -> str:
    """A tool input as canonical JSON (a bare string input is a command: collapsed)."""
    normalized = _normalize(tool_input, command=isinstance(tool_input, str))
    return json.dumps(normalized, sort_keys=True, separators=(",", ":"), default=str)


def transcript_steps(transcript: Transcript) -> list[Step]:
    """Every entry of a transcript as a step, in order."""
    steps: list[Step] = []
    for number, entry in enumerate(transcript.entries):
        call = entry.tool
        if call is not None:
            loose = f"tool\x00{call.name}"
            key = f"{loose}\x00{input_key(call.input)}"
            tool: str | None = call.name
        else:
            loose = entry.type
            key = f"{loose}\x00{_collapse(entry.text or '')}"
            tool = None
        steps.append(Step(len(steps), number, entry.type, tool, key, loose, entry))
    return steps


def _pair(left: Step, right: Step) -> Row:
    return Row(left, right, "same" if left.key == right.key else "changed")


def _exact_middle(left: Sequence[Step], right: Sequence[Step]) -> list[Row]:
    """Weighted LCS of two step lists: rows in order (one-sided runs: left's first)."""
    n, m = len(left), len(right)
    width = m + 1
    moves = bytearray((n + 1) * width)  # 0 diagonal, 1 up (left only), 2 across (right only)
    previous = [0] * width
    for j in range(1, width):
        moves[j] = 2
    for i in range(1, n + 1):
        a = left[i - 1]
        current = [0] * width
        moves[i * width] = 1
        base = i * width
        for j in range(1, width):
            b = right[j - 1]
            best = current[j - 1]
            move = 2
            up = previous[j]
            if up > best:
                best, move = up, 1
            if a.key == b.key:
                diagonal = previous[j - 1] + EXACT_SCORE
            elif a.loose_key == b.loose_key:
                diagonal = previous[j - 1] + LOOSE_SCORE
            else:
                diagonal = -1
            if diagonal >= best:
                best, move = diagonal, 0
            current[j] = best
            moves[base + j] = move
        previous = current
    rows: list[Row] = []
    i, j = n, m
    while i > 0 or j > 0:
        move = moves[i * width + j]
        if move == 0:
            rows.append(_pair(left[i - 1], right[j - 1]))
            i, j = i - 1, j - 1
        elif move == 1:
            rows.append(Row(left[i - 1], None, "only-left"))
            i -= 1
        else:
            rows.append(Row(None, right[j - 1], "only-right"))
            j -= 1
    rows.reverse()
    return rows


def _first_at(steps: Sequence[Step], start: int, key: str) -> int | None:
    for offset in range(1, LOOKAHEAD + 1):
        if start + offset >= len(steps):
            return None
        if steps[start + offset].key == key:
            return offset
    return None


def _greedy_middle(left: Sequence[Step], right: Sequence[Step]) -> list[Row]:
    """A walk that skips ahead on either side to the nearest exact match (O((n+m)·k))."""
    rows: list[Row] = []
    i = j = 0
    while i < len(left) and j < len(right):
        a, b = left[i], right[j]
        if a.key == b.key:
            rows.append(Row(a, b, "same"))
            i, j = i + 1, j + 1
            continue
        skip_left = _first_at(left, i, b.key)
        skip_right = _first_at(right, j, a.key)
        if skip_left is not None and (skip_right is None or skip_left <= skip_right):
            rows.extend(Row(s, None, "only-left") for s in left[i : i + skip_left])
            i += skip_left
        elif skip_right is not None:
            rows.extend(Row(None, s, "only-right") for s in right[j : j + skip_right])
            j += skip_right
        elif a.loose_key == b.loose_key:
            rows.append(Row(a, b, "changed"))
            i, j = i + 1, j + 1
        else:
            rows.append(Row(a, None, "only-left"))
            rows.append(Row(None, b, "only-right"))
            i, j = i + 1, j + 1
    rows.extend(Row(s, None, "only-left") for s in left[i:])
    rows.extend(Row(None, s, "only-right") for s in right[j:])
    return rows


def align_steps(left: Sequence[Step], right: Sequence[Step]) -> Alignment:
    """Align two step lists (see the module docstring)."""
    start = 0
    while start < len(left) and start < len(right) and left[start].key == right[start].key:
        start += 1
    end_left, end_right = len(left), len(right)
    while (
        end_left > start
        and end_right > start
        and left[end_left - 1].key == right[end_right - 1].key
    ):
        end_left, end_right = end_left - 1, end_right - 1
    middle_left, middle_right = left[start:end_left], right[start:end_right]
    method: Literal["exact", "greedy"] = "exact"
    note = None
    if len(middle_left) * len(middle_right) > MAX_CELLS:
        method = "greedy"
        note = (
            f"{len(left):,} and {len(right):,} steps are too many to align exactly: "
            f"aligned greedily (looking {LOOKAHEAD} steps ahead), which may pair fewer steps"
        )
        middle = _greedy_middle(middle_left, middle_right)
    else:
        middle = _exact_middle(middle_left, middle_right)
    rows = [
        *(Row(a, b, "same") for a, b in zip(left[:start], right[:start], strict=True)),
        *middle,
        *(Row(a, b, "same") for a, b in zip(left[end_left:], right[end_right:], strict=True)),
    ]
    first = next((n for n, row in enumerate(rows) if row.relation != "same"), None)
    return Alignment(tuple(rows), first, method, note)


def align_transcripts(left: Transcript, right: Transcript) -> Alignment:
    """Align two transcripts' steps."""
    return align_steps(transcript_steps(left), transcript_steps(right))
