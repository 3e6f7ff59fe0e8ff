"""What the judges read, grouped into chunks that fit a context, and the calls over them.

When the blocks of a judgment (``prompts.goal_blocks``, ``prompts.audit_blocks``) exceed
the judge's context budget (tokens counted as characters / 4), they are grouped into
consecutive chunks; every chunk's prompt carries the sparse index, so interactions
elsewhere in the run can still be referred to by id. A single block larger than a chunk
is cut in the middle, with a marker saying how much was left out.

:func:`judge_run` sends one goal judgment and one interaction audit per chunk, all at once,
and merges the answers into :class:`~axis_eval.scoring.models.JudgeVerdicts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from axis_eval._types import Category
from axis_eval.config.scenario import Scenario
from axis_eval.redact import Redactor
from axis_eval.scoring.cache import JudgeCache
from axis_eval.scoring.checks import RubricCheck
from axis_eval.scoring.judge import Judge, JudgeFailed, JudgeRequest, SpendMeter, ask_validated
from axis_eval.scoring.judge_api import MAX_OUTPUT_TOKENS
from axis_eval.scoring.models import (
    CheckVerdict,
    InteractionAudit,
    JudgeVerdicts,
    NecessityVerdict,
)
from axis_eval.scoring.prompts import (
    AUDIT_SYSTEM,
    GOAL_SYSTEM,
    AuditAnswer,
    Block,
    GoalAnswer,
    RunFacts,
    audit_blocks,
    audit_checker,
    audit_request,
    goal_blocks,
    goal_checker,
    goal_request,
    merge_audits,
    merge_goal,
)
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import SparseIndex

CHARS_PER_TOKEN = 4
"""Token estimate used for budgets (the scripted model server counts the same way)."""
MAX_AUDITS_PER_CHUNK = 120
"""Interactions audited per call at most, so one answer fits the output budget."""


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


def cut_middle(text: str, limit: int) -> str:
    """``text`` with its middle replaced by a marker so it is at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = max(0, limit - 80)
    head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :] if keep else ""
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[… {left_out} characters left out to fit the judge's context …]\n{tail}"


def group(blocks: Sequence[Block], budget_chars: int, max_ids: int | None = None) -> list[Chunk]:
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
        too_many = (
            max_ids is not None
            and sum(len(b.interaction_ids) for b in current) + len(block.interaction_ids) > max_ids
        )
        if current and (too_long or too_many):
            chunks.append(Chunk(tuple(current), cut))
            current, size, cut = [], 0, 0
        current.append(Block(text, block.interaction_ids))
        size += len(text) + 2
        cut += cut_now
    if current or not chunks:
        chunks.append(Chunk(tuple(current), cut))
    return chunks


def index_text(index: SparseIndex, budget_chars: int, redactor: Redactor) -> tuple[str, bool]:
    """The sparse index as redacted text, cut to ``budget_chars`` (and whether it was cut)."""
    lines = [redactor.text(line) for line in (*index.header(), "", *index.lines())]
    out: list[str] = []
    size = 0
    for n, line in enumerate(lines):
        if size + len(line) + 1 > budget_chars and n > 3:
            out.append(f"… ({len(lines) - n} more interactions left out to fit the context)")
            return "\n".join(out), True
        out.append(line)
        size += len(line) + 1
    return "\n".join(out), False


# ---------------------------------------------------------------------- judging a run


@dataclass(frozen=True)
class RunMaterial:
    """One finished run, as the judges see it."""

    transcript: Transcript
    index: SparseIndex
    scenario: Scenario
    rubric: list[RubricCheck]
    deterministic: dict[int, CheckVerdict]
    """Results of the checks with ``run``, by rubric position."""
    workspace: Path | None = None
    """The agent's workspace while it exists (named in an agent judge's goal prompt)."""


def _workspace_note(judge: Judge, workspace: Path | None) -> str | None:
    if judge.choice.kind != "agent" or workspace is None:
        return None
    return (
        f"The agent worked in the folder {workspace}. You may read files there to verify "
        "the checks; do not change anything in it."
    )


def _goal_requests(
    m: RunMaterial,
    facts: RunFacts,
    checks: list[str],
    blocks: list[Block],
    budget: int,
    redactor: Redactor,
) -> tuple[list[JudgeRequest], int]:
    fixed = len(GOAL_SYSTEM) + len(facts.task) + sum(len(c) + 8 for c in checks) + 1000
    if fixed + sum(len(b.text) + 2 for b in blocks) <= budget:
        return [goal_request(facts, checks, "\n\n".join(b.text for b in blocks))], 0
    index, _ = index_text(m.index, budget // 4, redactor)
    final = cut_middle(facts.final_result or "", budget // 8)
    facts = RunFacts(facts.scenario, facts.task, final or None, facts.workspace_note)
    parts = group(blocks, budget - fixed - len(index) - len(final))
    requests = [
        goal_request(facts, checks, p.text, part=k, parts=len(parts), index=index)
        for k, p in enumerate(parts, 1)
    ]
    return requests, sum(p.cut for p in parts)


def _audit_parts(
    m: RunMaterial, blocks: list[Block], budget: int, redactor: Redactor
) -> tuple[str, list[Chunk]]:
    fixed = len(AUDIT_SYSTEM) + len(m.scenario.prompt) + 1000
    whole = sum(len(b.text) + 2 for b in blocks)
    if fixed + whole <= budget and len(blocks) <= MAX_AUDITS_PER_CHUNK:
        # One part: each detail block is headed by its index line, so only the header.
        return redactor.text("\n".join(m.index.header())), [Chunk(tuple(blocks))]
    index, _ = index_text(m.index, budget // 4, redactor)
    return index, group(blocks, budget - fixed - len(index), MAX_AUDITS_PER_CHUNK)


async def judge_run(
    judge: Judge,
    m: RunMaterial,
    *,
    meter: SpendMeter,
    cache: JudgeCache | None,
    redactor: Redactor,
    context_tokens: int,
) -> JudgeVerdicts:
    """One goal judgment and one interaction audit per chunk, concurrently, merged.

    Raises:
        JudgeFailed: a call failed for good (the other calls are cancelled).
    """
    budget = context_tokens * CHARS_PER_TOKEN - MAX_OUTPUT_TOKENS * CHARS_PER_TOKEN
    task = redactor.text(m.scenario.prompt)
    final = redactor.text(m.transcript.result or "") or None
    facts = RunFacts(m.scenario.name, task, final, _workspace_note(judge, m.workspace))
    judged = [c for c in m.rubric if c.run is None]
    checks = [redactor.text(c.text) for c in judged]
    goal_reqs: list[JudgeRequest] = []
    cut = 0
    if judged:
        blocks = goal_blocks(m.transcript, m.index, redactor)
        goal_reqs, cut = _goal_requests(m, facts, checks, blocks, budget, redactor)
    index, audit_parts = "", list[Chunk]()
    if m.index.interactions:
        blocks = audit_blocks(m.transcript, m.index, redactor)
        index, audit_parts = _audit_parts(m, blocks, budget, redactor)
        cut += sum(p.cut for p in audit_parts)
    known = {i.id for i in m.index.interactions}
    audit_facts = RunFacts(m.scenario.name, task)
    n = len(audit_parts)
    audit_asks = [
        (
            audit_request(audit_facts, index, p.text, part=k, parts=n),
            audit_checker(p.interaction_ids, known, _categories(m, p)),
        )
        for k, p in enumerate(audit_parts, 1)
    ]
    goal_check = goal_checker(len(checks))
    goals, audits = await _ask_all(
        judge, [(r, goal_check) for r in goal_reqs], audit_asks, meter=meter, cache=cache
    )
    notes = _notes(len(goal_reqs), n, cut, context_tokens)
    return _verdicts(m, goals, audits, audit_parts, meter, notes=notes)


async def _ask_all(
    judge: Judge,
    goal_asks: list[tuple[JudgeRequest, Callable[[GoalAnswer], None]]],
    audit_asks: list[tuple[JudgeRequest, Callable[[AuditAnswer], None]]],
    *,
    meter: SpendMeter,
    cache: JudgeCache | None,
) -> tuple[list[GoalAnswer], list[AuditAnswer]]:
    """Every request at once; the first :class:`JudgeFailed` cancels the rest."""
    try:
        async with asyncio.TaskGroup() as tg:
            goals = [
                tg.create_task(
                    ask_validated(judge, r, GoalAnswer, check=c, meter=meter, cache=cache)
                )
                for r, c in goal_asks
            ]
            audits = [
                tg.create_task(
                    ask_validated(judge, r, AuditAnswer, check=c, meter=meter, cache=cache)
                )
                for r, c in audit_asks
            ]
    except BaseExceptionGroup as group:
        raise _first_failure(group) from None
    return [g.result() for g in goals], [a.result() for a in audits]


def _first_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first :class:`JudgeFailed` of a task group's errors, else the group itself."""
    failed = group.subgroup(JudgeFailed)
    while failed is not None:
        first = failed.exceptions[0]
        if not isinstance(first, BaseExceptionGroup):
            return first
        failed = first
    return group


def _categories(m: RunMaterial, part: Chunk) -> set[Category]:
    ids = set(part.interaction_ids)
    return {c for i in m.index.interactions if i.id in ids for c in i.categories}


def _counts(m: RunMaterial, part: Chunk) -> dict[Category, int]:
    ids = set(part.interaction_ids)
    counts: dict[Category, int] = {}
    for i in m.index.interactions:
        if i.id in ids:
            for c in i.categories:
                counts[c] = counts.get(c, 0) + 1
    return counts


def _notes(goal_parts: int, audit_parts: int, cut: int, context_tokens: int) -> list[str]:
    notes = []
    if goal_parts > 1 or audit_parts > 1:
        notes.append(
            f"judged in parts (goal: {goal_parts}, audit: {audit_parts}) to fit the judge's "
            f"context of {context_tokens} tokens; every part carried the sparse index"
        )
    if cut:
        notes.append(f"{cut} oversized transcript item(s) were cut in the middle for the judge")
    return notes


def _verdicts(
    m: RunMaterial,
    goals: list[GoalAnswer],
    audits: list[AuditAnswer],
    parts: list[Chunk],
    meter: SpendMeter,
    notes: list[str],
) -> JudgeVerdicts:
    judged = [c for c in m.rubric if c.run is None]
    grades = iter(merge_goal(goals, len(judged)) if goals else [])
    checks: list[CheckVerdict] = []
    for c in m.rubric:
        if c.run is None:
            score, why = next(grades)
            checks.append(CheckVerdict(check=c.text, weight=c.weight, score=score, rationale=why))
        elif c.position in m.deterministic:
            checks.append(m.deterministic[c.position])
        else:
            raise JudgeFailed(f"the check {c.text!r} (`{c.run}`) has no result")
    merged = merge_audits(audits, [_counts(m, p) for p in parts])
    audited = {a.id for a in merged.audits}
    missing = [i.id for i in m.index.interactions if i.id not in audited]
    if missing and audits:
        notes.append(f"{len(missing)} interaction(s) were not audited and keep the defaults")
    return JudgeVerdicts(
        checks=checks,
        audits=[
            InteractionAudit(
                interaction_id=a.id,
                success=a.success,
                weight=a.weight,
                relevance=a.relevance,
                rationale=a.rationale,
            )
            for a in merged.audits
        ],
        necessity={
            c: NecessityVerdict(
                score=g.score, unnecessary_ids=g.unnecessary_ids, rationale=g.rationale
            )
            for c, g in merged.necessity.items()
        },
        chunks=max(len(goals), len(audits)),
        spend=meter.spend(),
        notes=notes,
    )
