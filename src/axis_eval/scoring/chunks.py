"""What the judges read, as redacted text blocks, grouped into chunks that fit a context.

The goal judge reads the whole transcript: one block per entry (messages, thinking, each
tool call with its full input and result). The interaction audit reads the full content of
each interaction of the sparse index: one block per interaction, headed by its index line.
When the blocks exceed the judge's context budget (tokens counted as characters / 4), they
are grouped into consecutive chunks; every chunk's prompt carries the sparse index, so
interactions elsewhere in the run can still be referred to by id. A single block larger
than a chunk is cut in the middle, with a marker saying how much was left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from axis_eval._util.redact import Redactor
from axis_eval.transcript.models import Entry, Transcript
from axis_eval.transcript.sparse_index import Interaction, SparseIndex

CHARS_PER_TOKEN = 4
"""Token estimate used for budgets (the scripted model server counts the same way)."""
MAX_AUDITS_PER_CHUNK = 120
"""Interactions audited per call at most, so one answer fits the output budget."""


@dataclass(frozen=True)
class Block:
    """One unit of judge input: an entry (goal) or an interaction (audit)."""

    text: str
    interaction_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Chunk:
    """Consecutive blocks sent in one call."""

    blocks: tuple[Block, ...]
    cut: int = 0
    """Blocks in this chunk that were cut to fit."""

    @property
    def text(self) -> str:
        """The blocks, separated by blank lines."""
        return "\n\n".join(b.text for b in self.blocks)

    @property
    def interaction_ids(self) -> list[int]:
        """Ids of the interactions whose content this chunk holds, in order."""
        return [i for b in self.blocks for i in b.interaction_ids]


def tokens_of(text: str) -> int:
    """The token estimate of ``text`` (characters / 4, rounded up)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def _entry_ids(index: SparseIndex) -> dict[int, Interaction]:
    return {i.entry_index: i for i in index.interactions}


def _tool_block(entry: Entry, interaction: Interaction | None, header: str) -> str:
    call = entry.tool
    assert call is not None
    lines = [header]
    if call.input is not None:
        lines.append(f"input: {_json(call.input)}")
    if call.output is None:
        lines.append("result: (none: the call had not returned when the run ended)")
    else:
        lines.append(f"result ({'error' if call.is_error else 'ok'}):\n{call.output}")
    return "\n".join(lines)


def goal_blocks(transcript: Transcript, index: SparseIndex, redactor: Redactor) -> list[Block]:
    """The whole transcript, one redacted block per entry."""
    by_entry = _entry_ids(index)
    blocks: list[Block] = []
    for n, entry in enumerate(transcript.entries):
        hit = by_entry.get(n)
        ids = (hit.id,) if hit else ()
        if entry.tool is not None:
            header = f"[TOOL CALL #{hit.id if hit else '?'}: {entry.tool.name}]"
            text = _tool_block(entry, hit, header)
        elif entry.type == "error":
            text = f"[ERROR #{hit.id if hit else '?'}]\n{entry.text or ''}"
        else:
            text = f"[{entry.type.upper()}]\n{entry.text or ''}"
        blocks.append(Block(redactor.text(text), ids))
    return blocks


def audit_blocks(transcript: Transcript, index: SparseIndex, redactor: Redactor) -> list[Block]:
    """Every interaction's full content, headed by its sparse-index line, redacted."""
    blocks: list[Block] = []
    entries = transcript.entries
    for interaction in index.interactions:
        header = interaction.line()
        entry = entries[interaction.entry_index] if interaction.entry_index < len(entries) else None
        if entry is not None and entry.tool is not None:
            text = _tool_block(entry, interaction, header)
        else:
            text = f"{header}\nerror reported: {entry.text if entry else ''}"
        blocks.append(Block(redactor.text(text), (interaction.id,)))
    return blocks


def cut_middle(text: str, limit: int) -> str:
    """``text`` with its middle replaced by a marker so it is at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 80)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :] if keep else ""
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[… {left_out} characters left out to fit the judge's context …]\n{tail}"


def group(
    blocks: Sequence[Block], budget_chars: int, max_ids: int | None = None
) -> list[Chunk]:
    """Consecutive chunks of at most ``budget_chars`` (and ``max_ids`` interactions)."""
    budget = max(1000, budget_chars)
    chunks: list[Chunk] = []
    current: list[Block] = []
    size = cut = cut_now = 0
    for block in blocks:
        text = block.text
        if len(text) > budget:
            text, cut_now = cut_middle(text, budget), 1
        else:
            cut_now = 0
        too_long = size + len(text) + 2 > budget
        too_many = max_ids is not None and sum(len(b.interaction_ids) for b in current) + len(
            block.interaction_ids
        ) > max_ids
        if current and (too_long or too_many):
            chunks.append(Chunk(tuple(current), cut))
            current, size, cut = [], 0, 0
        current.append(Block(text, block.interaction_ids))
        size += len(text) + 2
        cut += cut_now
    if current or not chunks:
        chunks.append(Chunk(tuple(current), cut))
    return chunks


def index_text(index: SparseIndex, budget_chars: int) -> tuple[str, bool]:
    """The sparse index as text, cut to ``budget_chars`` (and whether it was cut)."""
    lines = [*index.header(), "", *index.lines()]
    out: list[str] = []
    size = 0
    for n, line in enumerate(lines):
        if size + len(line) + 1 > budget_chars and n > 3:
            out.append(f"… ({len(lines) - n} more interactions left out to fit the context)")
            return "\n".join(out), True
        out.append(line)
        size += len(line) + 1
    return "\n".join(out), False
