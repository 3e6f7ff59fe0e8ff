"""A panel of judges (``judging.panel``): who the members are, and one run's verdicts
from theirs.

Every member judges the run as a single judge would (:meth:`JudgeScorer.verdicts_for` with
that member as the choice, its own cache identity: provider, model and base URL). The run's
verdicts are then the members' medians: per judged check the median 0–10 grade (an even
panel's mean of the two middle grades, rounded half-up), per audited interaction the
median of each of success, weight and relevance, per category the median necessity, whose
unnecessary ids are those more than half of the members named. A member that failed for
good on the run is left out of its medians (a note says so); when every member failed the
run is withheld. :class:`~axis_eval.scoring.panel_models.PanelGrades` keeps every member's
check grades for the agreement (:mod:`axis_eval.runs.agreement`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from axis_eval._types import CATEGORIES, Category
from axis_eval.config.models import Judging, PanelJudge
from axis_eval.errors import ConfigError
from axis_eval.planning.models import AgentSpec
from axis_eval.scoring.judge import DEFAULT_KEY_ENV, JudgeChoice, choose_judge, parse_api_model
from axis_eval.scoring.models import (
    CheckVerdict,
    InteractionAudit,
    JudgeSpend,
    JudgeVerdicts,
    NecessityVerdict,
)
from axis_eval.scoring.panel_models import PanelCheck, PanelGrades

__all__ = ["combine", "panel_choices"]


def _member(entry: str | PanelJudge, judging: Judging, run_agent: AgentSpec, i: int) -> JudgeChoice:
    where = f"judging.panel[{i}]"
    if isinstance(entry, str):
        if ":" in entry and parse_api_model(entry) is None:
            raise ConfigError(
                f"{where}: expected `anthropic:<model>`, `openai:<model>` or a judge agent's "
                f"name, found {entry!r}"
            )
        return choose_judge(judging, run_agent, entry)
    parsed = parse_api_model(entry.model)
    if parsed is None:
        raise ConfigError(
            f"{where}.model: expected `anthropic:<model>` or `openai:<model>`, "
            f"found {entry.model!r}"
        )
    provider, model = parsed
    return JudgeChoice(
        kind="api",
        provider=provider,
        model=model,
        base_url=entry.base_url or judging.base_url,
        api_key_env=entry.api_key_env or judging.api_key_env or DEFAULT_KEY_ENV[provider],
    )


def panel_choices(judging: Judging | None, run_agent: AgentSpec) -> list[JudgeChoice]:
    """The panel's members for a run of ``run_agent`` (empty: no panel configured).

    Raises:
        ConfigError: a malformed member, or the same judge twice.
    """
    if judging is None or not judging.panel:
        return []
    members = [_member(e, judging, run_agent, i) for i, e in enumerate(judging.panel)]
    seen: dict[tuple[str | None, ...], int] = {}
    for i, choice in enumerate(members):
        if choice.key in seen:
            raise ConfigError(
                f"judging.panel[{i}]: the same judge as judging.panel[{seen[choice.key]}] "
                f"({choice.label})",
                hint="give each member a different model, server or agent",
            )
        seen[choice.key] = i
    return members


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def _checks(
    answered: Sequence[JudgeVerdicts], n_members: int, index: Sequence[int]
) -> tuple[list[CheckVerdict], list[PanelCheck]]:
    first = answered[0].checks
    merged: list[CheckVerdict] = []
    table: list[PanelCheck] = []
    for pos, check in enumerate(first):
        if check.kind == "deterministic":
            merged.append(check)
            continue
        given = [v.checks[pos] for v in answered if pos < len(v.checks)]
        median = _median([c.score for c in given])
        near = min(given, key=lambda c: abs(c.score - median))
        grades: list[int | None] = [None] * n_members
        for member, verdict in zip(index, given, strict=False):
            grades[member] = verdict.score
        merged.append(
            check.model_copy(
                update={
                    "score": CheckVerdict.model_validate(
                        {"check": check.check, "score": median}
                    ).score,
                    "rationale": f"panel median {median:g}: {near.rationale}".strip(),
                }
            )
        )
        table.append(PanelCheck(check=check.check, grades=grades, median=median))
    return merged, table


def _audits(answered: Sequence[JudgeVerdicts]) -> list[InteractionAudit]:
    by_id: dict[int, list[InteractionAudit]] = {}
    for verdicts in answered:
        for audit in verdicts.audits:
            by_id.setdefault(audit.interaction_id, []).append(audit)
    return [
        InteractionAudit(
            interaction_id=i,
            success=_median([a.success for a in given]),
            weight=_median([a.weight for a in given]),
            relevance=_median([a.relevance for a in given]),
            rationale=given[0].rationale,
        )
        for i, given in sorted(by_id.items())
    ]


def _necessity(answered: Sequence[JudgeVerdicts]) -> dict[Category, NecessityVerdict]:
    out: dict[Category, NecessityVerdict] = {}
    for category in CATEGORIES:
        given = [v.necessity[category] for v in answered if category in v.necessity]
        if not given:
            continue
        counts: dict[int, int] = {}
        for verdict in given:
            for i in set(verdict.unnecessary_ids):
                counts[i] = counts.get(i, 0) + 1
        out[category] = NecessityVerdict(
            score=_median([g.score for g in given]),
            unnecessary_ids=sorted(i for i, c in counts.items() if c * 2 > len(answered)),
            rationale=given[0].rationale,
        )
    return out


def _spend(choices: Sequence[JudgeChoice], members: Sequence[JudgeVerdicts]) -> JudgeSpend:
    spends = [v.spend for v in members if v.spend is not None and v.spend.kind != "none"]
    if not spends:
        return JudgeSpend(kind="none")
    costs = [s.cost_usd for s in spends if s.cost_usd is not None]
    return JudgeSpend(
        judge="panel: " + ", ".join(c.label for c in choices),
        kind="api" if all(s.kind == "api" for s in spends) else "agent",
        calls=sum(s.calls for s in spends),
        cached_calls=sum(s.cached_calls for s in spends),
        input_tokens=sum(s.input_tokens for s in spends),
        output_tokens=sum(s.output_tokens for s in spends),
        cost_usd=round(sum(costs), 6) if costs else None,
        cost_estimated=any(s.cost_estimated for s in spends),
        cost_simulated=all(s.cost_simulated for s in spends),
    )


def combine(
    choices: Sequence[JudgeChoice], members: Sequence[JudgeVerdicts], margin: float
) -> JudgeVerdicts:
    """The run's verdicts from each member's (same order as ``choices``): the medians, the
    members' spend summed, and every member's check grades in ``panel``."""
    labels = [c.label for c in choices]
    index = [i for i, v in enumerate(members) if v.withheld_reason is None]
    answered = [members[i] for i in index]
    notes = [
        f"panel member {labels[i]} failed and is left out: {v.withheld_reason}"
        for i, v in enumerate(members)
        if v.withheld_reason is not None
    ]
    spend = _spend(choices, members)
    if not answered:
        reason = "every panel member failed: " + "; ".join(
            f"{labels[i]}: {v.withheld_reason}" for i, v in enumerate(members)
        )
        return members[0].model_copy(
            update={"spend": spend, "withheld_reason": reason, "notes": notes}
        )
    checks, table = _checks(answered, len(members), index)
    extra = [n for v in answered for n in v.notes]
    return JudgeVerdicts(
        checks=checks,
        audits=_audits(answered),
        necessity=_necessity(answered),
        chunks=max(v.chunks for v in answered),
        spend=spend,
        notes=list(dict.fromkeys(extra + notes)),
        panel=PanelGrades(members=labels, checks=table, margin=margin, notes=notes),
    )
