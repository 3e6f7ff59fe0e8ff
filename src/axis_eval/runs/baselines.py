"""Baselines: snapshots of a report's scores under ``.axis/baselines/``, and comparisons.

Rules (docs/baselines.md says the same for users):

- A composite drop is a regression only when it exceeds the noise band
  ``max(1, 2 × σ)``, σ being the sample standard deviation of the baseline's run
  composites. A single-run baseline (and every AXIS file) has no measured σ: band 1.
  A baseline made from a re-judged report also holds the judge's σ_judge of the composite
  and the band is ``max(1, 2·sqrt(σ² + σ_judge²))`` (an unmeasured term counts 0).
- Reliability regresses on its own. With the baseline's rate ``s_b / t_b`` and the current
  ``s_c / t_c``, the current run count "should" have produced ``t_c × s_b / t_b``
  successes; a shortfall of at least one whole run is a regression. With equal run counts
  that is simply "fewer runs scored" (3/3 → 2/3); with different counts it compares the
  rates while tolerating less than one run's worth of difference (2/3 → 3/5 passes,
  3/3 → 4/5 does not).
- With at least 4 scored runs on each side a two-sided Mann–Whitney U p-value is shown
  beside the verdict; it never gates.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from axis_eval._types import DIMENSIONS, camel
from axis_eval._util.clock import now_iso
from axis_eval.errors import AxisError
from axis_eval.files import atomic_write_text
from axis_eval.report.models import PairEntry, Reliability, ReportManifest
from axis_eval.runs.aggregate import (
    composite,
    noise_band as noise_band,  # re-exported (tests, callers)
    reliability,
)
from axis_eval.runs.baseline_models import (
    Baseline,
    BaselineComparison,
    BaselineEntry,
    ComparisonEntry,
    ComparisonSummary,
    DimensionDelta,
    PairRef,
    ReliabilityDelta,
    Verdict,
)
from axis_eval.runs.judge_noise import combined_band
from axis_eval.runs.store import read_readable

DEFAULT_NAME = "default"
BASELINES_DIR = Path(".axis") / "baselines"
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MIN_MWU_RUNS = 4
EXACT_MWU_MAX_TOTAL = 20
"""Up to this many runs in all the p-value is exact; above, the normal approximation."""


class BaselineError(AxisError):
    """A bad baseline name, a missing baseline or an unreadable baseline file (exit 1)."""


def validate_name(name: str) -> str:
    """The name when it is valid.

    Raises:
        BaselineError: not 1-64 letters, digits, hyphens or underscores.
    """
    if not NAME_RE.match(name):
        raise BaselineError(
            f'Invalid baseline name "{name}". Names must be 1-64 characters using only '
            "letters, numbers, hyphens, and underscores."
        )
    return name


def baselines_root(config_dir: str | Path) -> Path:
    """``<config dir>/.axis/baselines``."""
    return Path(config_dir) / BASELINES_DIR


def baseline_path(config_dir: str | Path, name: str) -> Path:
    """The file of a baseline (after validating its name)."""
    return baselines_root(config_dir) / f"{validate_name(name)}.json"


def read_baseline(config_dir: str | Path, name: str = DEFAULT_NAME) -> Baseline | None:
    """A baseline by name, or None when it does not exist.

    Raises:
        BaselineError: invalid name, or the file is not a baseline.
    """
    path = baseline_path(config_dir, name)
    if not path.is_file():
        return None
    try:
        return Baseline.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError) as exc:
        raise BaselineError(f"baseline {name!r} is unreadable ({path}): {exc}") from exc


def load_baseline(config_dir: str | Path, name: str = DEFAULT_NAME) -> Baseline:
    """A baseline by name.

    Raises:
        BaselineError: invalid name, not found, or unreadable.
    """
    found = read_baseline(config_dir, name)
    if found is None:
        raise BaselineError(
            f'Baseline "{name}" not found.', hint="create it with `axis baseline set`"
        )
    return found


def list_baselines(config_dir: str | Path) -> list[Baseline]:
    """Every readable baseline, most recently updated first."""
    root = baselines_root(config_dir)
    if not root.is_dir():
        return []
    found = read_readable(Baseline, root.glob("*.json"))
    found.sort(key=lambda b: (b.updated_at, b.name), reverse=True)
    return found


def delete_baseline(config_dir: str | Path, name: str = DEFAULT_NAME) -> bool:
    """Delete a baseline; False when it did not exist."""
    path = baseline_path(config_dir, name)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def write_baseline(config_dir: str | Path, baseline: Baseline) -> Path:
    """Write a baseline atomically (pretty JSON and a newline, like AXIS)."""
    path = baseline_path(config_dir, baseline.name)
    atomic_write_text(path, baseline.model_dump_json(by_alias=True, indent=2) + "\n")
    return path


def run_composites(pair: PairEntry) -> list[float]:
    """The composites of a pair's scored runs, by run index."""
    runs = sorted(pair.runs, key=lambda r: r.run_index)
    return [c for r in runs if (c := composite(r)) is not None]


def sample_stdev(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n − 1) rounded to 2 decimals; None below two values."""
    return round(statistics.stdev(values), 2) if len(values) >= 2 else None


def entry_from_pair(pair: PairEntry, report: ReportManifest) -> BaselineEntry | None:
    """A pair's baseline entry, or None when its representative has no score."""
    score = pair.score
    if score is None or score.withheld or score.axis_score is None or pair.failed:
        return None
    scores = run_composites(pair)
    tokens = pair.token_usage.total if pair.token_usage else 0
    noise = pair.judge_noise
    head = noise.scores.get("axisScore") if noise else None
    return BaselineEntry(
        axis_score=score.axis_score,
        goal_achievement=score.goal_achievement or 0,
        environment=score.environment or 0,
        service=score.service or 0,
        agent=score.agent or 0,
        duration_ms=pair.duration_ms,
        tokens=tokens,
        from_report_id=report.report_id,
        timestamp=report.timestamp,
        runs=pair.run_count,
        run_scores=scores or [float(score.axis_score)],
        stdev=sample_stdev(scores),
        reliability=pair.reliability or reliability(pair.runs),
        judge_stdev=head.judge_stdev if head else None,
        rejudged=noise.rejudge if noise and head and head.judge_stdev is not None else None,
    )


def set_baseline(
    config_dir: str | Path, report: ReportManifest, name: str = DEFAULT_NAME
) -> tuple[Baseline, int]:
    """Create or merge a baseline from a report; return it and how many pairs were merged.

    Every pair with a score overwrites its entry; other entries are kept. The file is
    written when anything merged or the baseline is new.
    """
    existing = read_baseline(config_dir, name)
    now = now_iso()
    baseline = existing or Baseline(name=name, created_at=now, updated_at=now)
    merged = 0
    for pair in report.results:
        entry = entry_from_pair(pair, report)
        if entry is None:
            continue
        baseline.results.setdefault(pair.scenario_key, {})[pair.agent_name] = entry
        merged += 1
    if merged or existing is None:
        baseline.updated_at = now
        write_baseline(config_dir, baseline)
    return baseline, merged


def reliability_delta(baseline: Reliability, current: Reliability) -> ReliabilityDelta:
    """Compare reliability: a regression when the current runs fall at least one whole run
    short of what the baseline's success rate predicts for the current run count."""
    if baseline.total <= 0 or current.total <= 0:
        return ReliabilityDelta(baseline=baseline, current=current, expected=0, regressed=False)
    expected = current.total * baseline.succeeded / baseline.total
    regressed = expected - current.succeeded >= 1 - 1e-9
    return ReliabilityDelta(
        baseline=baseline, current=current, expected=round(expected, 2), regressed=regressed
    )


def compare(baseline: Baseline, report: ReportManifest) -> BaselineComparison:
    """Compare a report against a baseline (see the module docstring for the rules)."""
    result = BaselineComparison(baseline_name=baseline.name, report_id=report.report_id)
    seen: set[tuple[str, str]] = set()
    new_keys: set[str] = set()
    for pair in report.results:
        key = (pair.scenario_key, pair.agent_name)
        seen.add(key)
        entry = baseline.results.get(pair.scenario_key, {}).get(pair.agent_name)
        if entry is None:
            if entry_from_pair(pair, report) is not None and pair.score is not None:
                result.new.append(
                    PairRef(
                        scenario_key=pair.scenario_key,
                        agent_name=pair.agent_name,
                        score=pair.score.axis_score,
                    )
                )
                new_keys.add(pair.scenario_key)
            continue
        result.entries.append(_compare_pair(entry, pair))
    for scenario_key, agents in baseline.results.items():
        for agent_name, entry in agents.items():
            if (scenario_key, agent_name) not in seen:
                result.vanished.append(
                    PairRef(
                        scenario_key=scenario_key, agent_name=agent_name, score=entry.axis_score
                    )
                )
    entries = result.entries
    result.summary = ComparisonSummary(
        improved=sum(e.verdict == "improved" for e in entries),
        regressed=sum(e.regressed for e in entries),
        unchanged=sum(e.verdict == "unchanged" for e in entries),
        unscored=sum(e.verdict == "unscored" for e in entries),
        new_scenarios=len(new_keys),
        new_pairs=len(result.new),
        vanished_pairs=len(result.vanished),
        score_regressions=sum(e.score_regressed for e in entries),
        reliability_regressions=sum(e.reliability.regressed for e in entries),
    )
    return result


def _compare_pair(entry: BaselineEntry, pair: PairEntry) -> ComparisonEntry:
    score = pair.score
    if score is not None and (score.withheld or score.axis_score is None):
        score = None
    current = None if score is None or score.axis_score is None else float(score.axis_score)
    band = combined_band(entry.stdev, entry.judge_stdev)
    delta = None if current is None else round(current - entry.axis_score, 2)
    verdict: Verdict
    if delta is None:
        verdict = "unscored"
    elif delta < -band:
        verdict = "regressed"
    elif delta > band:
        verdict = "improved"
    else:
        verdict = "unchanged"
    rel = reliability_delta(
        entry.reliability_or_default, pair.reliability or reliability(pair.runs)
    )
    categories: dict[str, DimensionDelta] = {}
    for dim in DIMENSIONS:
        before = float(getattr(entry, dim))
        now = None if score is None else score.dimension(dim)
        categories[camel(dim)] = DimensionDelta(
            baseline=before,
            current=now,
            delta=None if now is None else round(now - before, 2),
        )
    ours = run_composites(pair)
    theirs = entry.scores
    p_value: float | None = None
    method: Literal["exact", "normal", "insufficient n"] = "insufficient n"
    if len(ours) >= MIN_MWU_RUNS and len(theirs) >= MIN_MWU_RUNS:
        p_value, method = mann_whitney_u(theirs, ours)
    return ComparisonEntry(
        scenario_key=pair.scenario_key,
        agent_name=pair.agent_name,
        baseline=entry.axis_score,
        current=current,
        delta=delta,
        band=round(band, 2),
        noise_measured=entry.noise_measured,
        baseline_runs=entry.run_count,
        current_runs=pair.run_count,
        stdev=entry.stdev,
        judge_stdev=entry.judge_stdev,
        verdict=verdict,
        score_regressed=verdict == "regressed",
        reliability=rel,
        regressed=verdict == "regressed" or rel.regressed,
        categories=categories,
        p_value=p_value,
        p_value_method=method,
    )


def _midranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..N of ``values`` with ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        rank = (i + j + 2) / 2
        for k in range(i, j + 1):
            ranks[order[k]] = rank
        i = j + 1
    return ranks


def mann_whitney_u(
    a: Sequence[float], b: Sequence[float]
) -> tuple[float, Literal["exact", "normal"]]:
    """Two-sided Mann–Whitney U p-value of samples ``a`` and ``b``, and the method used.

    ``exact`` (``len(a) + len(b) <= 20``): the permutation distribution of the rank sum of
    ``a`` over the pooled midranks, counted by dynamic programming, so ties are handled
    exactly; p = P(|R − E[R]| ≥ |r − E[R]|). ``normal`` (larger samples): the normal
    approximation with tie correction of the variance and a 0.5 continuity correction.
    """
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    ranks = _midranks([*a, *b])
    n = n1 + n2
    if n <= EXACT_MWU_MAX_TOTAL:
        doubled = [round(2 * r) for r in ranks]  # midranks are multiples of 0.5
        observed = sum(doubled[:n1])
        mean2 = n1 * (n + 1)  # 2 × E[R]
        # counts[k][s]: subsets of size k with doubled rank sum s
        counts: list[dict[int, int]] = [dict() for _ in range(n1 + 1)]
        counts[0][0] = 1
        for r in doubled:
            for k in range(min(n1, n) - 1, -1, -1):
                for s, c in counts[k].items():
                    counts[k + 1][s + r] = counts[k + 1].get(s + r, 0) + c
        total = math.comb(n, n1)
        extreme = abs(observed - mean2)
        hits = sum(c for s, c in counts[n1].items() if abs(s - mean2) >= extreme)
        return min(1.0, hits / total), "exact"
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    ties = _tie_sizes([*a, *b])
    var = n1 * n2 / 12 * ((n + 1) - sum(t**3 - t for t in ties) / (n * (n - 1)))
    if var <= 0:
        return 1.0, "normal"
    z = max(0.0, abs(u - mean) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2))), "normal"


def _tie_sizes(values: Sequence[float]) -> list[int]:
    sizes: dict[float, int] = {}
    for v in values:
        sizes[v] = sizes.get(v, 0) + 1
    return [t for t in sizes.values() if t > 1]
