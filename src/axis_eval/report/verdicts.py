"""What CI gates on after ``axis run``: one verdict per pair.

A pair *passes* unless it failed (no run scored, or its pass rate is below
``--min-pass-rate``), regressed against the ``--compare-baseline`` baseline (score or
reliability), or its representative composite is below ``--min-score``. A cancelled pair
(an interrupted run) is *skipped*. The terminal summary, ``--junit`` and ``--summary-md``
all render these verdicts, so the three never disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from axis_eval.report.models import PairEntry, ReportManifest
from axis_eval.runs.aggregate import composite

if TYPE_CHECKING:
    # Annotations only: a run without --compare-baseline never loads the baseline models.
    from axis_eval.runs.baseline_models import BaselineComparison, ComparisonEntry

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
"""Terminal escape sequences (colours, titles) an agent's stderr may carry into an error."""

Outcome = Literal["passed", "failed", "skipped"]
ReasonKind = Literal["failed", "below-min-score", "unscored", "regressed"]
MAX_MESSAGE = 300
"""Characters of an agent's error kept in one failure message (the report has all)."""


@dataclass(frozen=True)
class Reason:
    """Why a pair does not pass: a kind CI can group on and a sentence with the numbers."""

    kind: ReasonKind
    message: str


@dataclass(frozen=True)
class PairVerdict:
    """One pair's CI outcome."""

    pair: PairEntry
    outcome: Outcome
    reasons: list[Reason] = field(default_factory=list)
    composite: int | None = None
    """The representative run's composite (None: unscored, withheld or failed), the value
    ``--min-score`` was held against."""
    comparison: ComparisonEntry | None = None
    """The pair's baseline comparison, when ``--compare-baseline`` compared it."""
    new: bool = False
    """Compared, and the baseline has no such pair."""

    @property
    def label(self) -> str:
        """``scenario × agent``."""
        return f"{self.pair.scenario_key} × {self.pair.agent_name}"

    def has(self, kind: ReasonKind) -> bool:
        """True when one of the reasons is of this kind."""
        return any(r.kind == kind for r in self.reasons)


@dataclass(frozen=True)
class CiVerdicts:
    """Every pair's verdict, with the gates that produced them."""

    manifest: ReportManifest
    report_dir: Path
    pairs: list[PairVerdict]
    min_score: int | None = None
    comparison: BaselineComparison | None = None

    def count(self, outcome: Outcome) -> int:
        """Pairs with this outcome."""
        return sum(v.outcome == outcome for v in self.pairs)

    def with_reason(self, kind: ReasonKind) -> list[PairVerdict]:
        """Pairs that carry a reason of this kind."""
        return [v for v in self.pairs if v.has(kind)]

    @cached_property  # asked once per row of a summary: computing it each time was O(N²)
    def scored(self) -> bool:
        """Whether any run of the report carries a score (not a ``--no-score`` run)."""
        return any(r.score is not None for p in self.manifest.results for r in p.runs)

    @property
    def gate_failed(self) -> bool:
        """A pair is below ``--min-score`` or has no composite to hold against it."""
        return bool(self.with_reason("below-min-score") or self.with_reason("unscored"))


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (CI pages show them as garbage)."""
    return _ANSI.sub("", text)


def first_line(text: str) -> str:
    """The first line of ``text``, cut to :data:`MAX_MESSAGE` characters."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return str(int(value)) if value == int(value) else f"{value:g}"


def _failed_reason(pair: PairEntry) -> Reason:
    if pair.error:
        return Reason("failed", f"failed: {first_line(pair.error)}")
    rel = pair.reliability
    if rel is not None and rel.total == 0 and rel.withheld:
        # Every run finished but none could be scored: the judge's reason, not "0/0".
        reason = next(
            (r.score.withheld_reason for r in pair.runs if r.score and r.score.withheld_reason),
            "no reason recorded",
        )
        n = rel.withheld
        return Reason(
            "failed",
            f"scores withheld ({n}/{n} runs; the judge could not score them): {first_line(reason)}",
        )
    counts = f" ({rel.succeeded}/{rel.total} runs succeeded)" if rel is not None else ""
    return Reason("failed", f"failed: no run succeeded{counts}")


def regression_reasons(entry: ComparisonEntry, baseline: str) -> list[Reason]:
    """A score and/or a reliability regression against ``baseline``, with the numbers."""
    out: list[Reason] = []
    if entry.score_regressed and entry.delta is not None:
        band = f"±{_num(entry.band)}" + ("" if entry.noise_measured else " (noise unmeasured)")
        out.append(
            Reason(
                "regressed",
                f"regressed vs baseline {baseline}: {_num(entry.baseline)} → "
                f"{_num(entry.current)} ({_num(entry.delta)}), beyond the noise band {band}",
            )
        )
    if entry.reliability.regressed:
        b, c = entry.reliability.baseline, entry.reliability.current
        out.append(
            Reason(
                "regressed",
                f"reliability regressed vs baseline {baseline}: {b.succeeded}/{b.total} → "
                f"{c.succeeded}/{c.total}",
            )
        )
    if entry.regressed and not out:  # a future kind of regression still fails, named
        out.append(Reason("regressed", f"regressed vs baseline {baseline}"))
    return out


def pair_verdict(
    pair: PairEntry,
    *,
    min_score: int | None,
    comparison: ComparisonEntry | None,
    baseline: str | None,
    new: bool = False,
) -> PairVerdict:
    """The verdict of one pair under the gates."""
    reasons: list[Reason] = []
    if pair.failed:
        reasons.append(_failed_reason(pair))
    head = next((r for r in pair.runs if r.run_index == pair.representative_run_index), None)
    value = composite(head) if head is not None else None
    if min_score is not None and pair.status != "cancelled":
        if value is not None and value < min_score:
            reasons.append(
                Reason("below-min-score", f"composite {_num(value)} below --min-score {min_score}")
            )
        elif value is None and not pair.failed:
            # A gate that cannot be evaluated must not pass silently.
            reasons.append(
                Reason("unscored", f"no composite to hold against --min-score {min_score}")
            )
    if comparison is not None and baseline is not None:
        reasons.extend(regression_reasons(comparison, baseline))
    if reasons:
        outcome: Outcome = "failed"
    elif pair.status == "cancelled":
        outcome = "skipped"
    else:
        outcome = "passed"
    return PairVerdict(
        pair=pair,
        outcome=outcome,
        reasons=reasons,
        composite=None if value is None else int(value),
        comparison=comparison,
        new=new,
    )


def verdicts(
    manifest: ReportManifest,
    report_dir: Path,
    *,
    min_score: int | None = None,
    comparison: BaselineComparison | None = None,
) -> CiVerdicts:
    """Every pair's verdict, in the report's order."""
    by_pair = {(e.scenario_key, e.agent_name): e for e in comparison.entries} if comparison else {}
    new = {(r.scenario_key, r.agent_name) for r in comparison.new} if comparison else set()
    name = comparison.baseline_name if comparison else None
    pairs = [
        pair_verdict(
            p,
            min_score=min_score,
            comparison=by_pair.get((p.scenario_key, p.agent_name)),
            baseline=name,
            new=(p.scenario_key, p.agent_name) in new,
        )
        for p in manifest.results
    ]
    return CiVerdicts(manifest, report_dir, pairs, min_score, comparison)


def below_min_lines(result: CiVerdicts) -> list[str]:
    """``BELOW --min-score 90: half × maker (80)`` lines, one per pair the gate failed."""
    lines = []
    for v in result.pairs:
        if v.has("below-min-score"):
            lines.append(
                f"BELOW --min-score {result.min_score}: {v.label} (composite {v.composite})"
            )
        elif v.has("unscored"):
            lines.append(f"BELOW --min-score {result.min_score}: {v.label} (no composite)")
    return lines
