"""Intervals, the paired test and load warnings as text: the terminal and the HTML page
share these lines (docs/statistics.md)."""

from __future__ import annotations

from axis_eval.report.models import (
    AgentInterval,
    DeltaInterval,
    PairedTest,
    PairEntry,
    ScoreInterval,
    Summary,
)
from axis_eval.report.panel_models import FlaggedCheck, PanelAgreement

_LABELS = {
    "axisScore": "AXIS",
    "goalAchievement": "Goal",
    "environment": "Env",
    "service": "Svc",
    "agent": "Agent",
}


def _n(value: float) -> str:
    return f"{round(value, 1):g}"


def _mean_ci(i: ScoreInterval) -> str:
    return f"{_n(i.mean)} [{_n(i.low)}, {_n(i.high)}]"


def interval_lines(entry: PairEntry) -> list[str]:
    """Under a pair with 3+ scored runs: its 95 % t intervals for the means of the
    composite and each dimension, then the exact order-statistic interval for the median
    composite and that interval's coverage; then, re-judged, :func:`judge_noise_lines`;
    then, judged by a panel, :func:`panel_lines`."""
    return (
        adaptive_lines(entry)
        + _interval_lines(entry)
        + judge_noise_lines(entry)
        + panel_lines(entry.panel)
    )


def adaptive_lines(entry: PairEntry) -> list[str]:
    """An adaptive pair's stop: how many runs it took, the interval there, and why."""
    stop = entry.adaptive
    if stop is None:
        return []
    width = "" if stop.width is None else f", width {_n(stop.width)}"
    where = "" if stop.low is None or stop.high is None else f" [{_n(stop.low)}, {_n(stop.high)}]"
    why = stop.reason or "still adding runs"
    return [
        f"    adaptive ({stop.rule}, target {_n(stop.target)}, up to {stop.max}): "
        f"{stop.runs} runs{width}{where}: {why}"
    ]


def _sd(value: float | None) -> str:
    return "–" if value is None else _n(value)


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def judge_noise_lines(entry: PairEntry) -> list[str]:
    """``    judge σ (re-judged ×2 over 3 runs) · runs σ · judge's share of the variance:``
    then ``AXIS 2.1 · 5.5 · 15%`` per score (docs/statistics.md, Re-judging)."""
    noise = entry.judge_noise
    if noise is None:
        return []
    who = f", {noise.judge}" if noise.judge else ""
    who += ", simulated" if noise.simulated else ""
    cells = [
        f"{_LABELS.get(k, k)} {_sd(v.judge_stdev)} · {_sd(v.runs_stdev)} · {_share(v.judge_share)}"
        for k, v in noise.scores.items()
    ]
    lines = [
        f"    re-judged ×{noise.rejudge} over {noise.runs} run{'s' if noise.runs != 1 else ''}"
        f"{who}: judge σ · runs σ · judge's share of the runs' variance",
        "      " + " | ".join(cells),
    ]
    lines += [f"      note: {n}" for n in noise.notes]
    return lines


def _interval_lines(entry: PairEntry) -> list[str]:
    intervals = entry.intervals
    if not intervals:
        return []
    means = [f"{_LABELS.get(k, k)} {_mean_ci(v)}" for k, v in intervals.items()]
    lines = [f"    95% t (mean, n={next(iter(intervals.values())).n}): " + " · ".join(means)]
    head = intervals.get("axisScore")
    if head is not None:
        lines.append(
            f"    median AXIS {_n(head.median)} [{_n(head.median_low)}, "
            f"{_n(head.median_high)}] (order statistics, {head.median_coverage:.1%} coverage)"
        )
    return lines


def load_lines(entry: PairEntry) -> list[str]:
    """``    ⚠ load 5.2 on 2 cores during run #1: …``, one per overloaded run."""
    if not entry.load_warning:
        return []
    return [f"    ⚠ {line}" for line in entry.load_warning.splitlines()]


def agent_interval_text(interval: AgentInterval) -> str:
    """``codex 84.2 [77.9, 90.5] over 4 scenarios (12 runs)`` or the note."""
    scope = f"{interval.clusters} scenario{'s' if interval.clusters != 1 else ''}"
    scope += f", {interval.runs} runs"
    if interval.mean is None:
        return f"{interval.agent_name}: no scored runs"
    if interval.low is None or interval.high is None:
        return f"{interval.agent_name} {_n(interval.mean)} ({scope}): {interval.note}"
    return (
        f"{interval.agent_name} {_n(interval.mean)} [{_n(interval.low)}, {_n(interval.high)}]"
        f" ({scope})"
    )


def suite_lines(summary: Summary) -> list[str]:
    """``  Per agent:   codex 84.2 [77.9, 90.5] (4 scenarios, 12 runs)`` (95 %, clustered);
    then, judged by a panel, :func:`suite_panel_lines`."""
    if not summary.agent_intervals:
        return suite_panel_lines(summary)
    texts = [agent_interval_text(i) for i in summary.agent_intervals]
    head = "  Per agent:  mean AXIS, 95% t clustered by scenario: " + " · ".join(texts)
    return [head, *suite_panel_lines(summary)]


def _alpha(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def panel_text(panel: PanelAgreement) -> str:
    """``panel of 3 (a, b, c): α 0.62 over 6 check grades · a–b 0.80 · a–c 0.41 · …``."""
    pairs = " · ".join(f"{'–'.join(p.members)} {_alpha(p.alpha)}" for p in panel.pairs)
    return (
        f"panel of {len(panel.members)} ({', '.join(panel.members)}): Krippendorff α "
        f"{_alpha(panel.alpha)} over {panel.units} check grade{'s' if panel.units != 1 else ''}"
        + (f" · pairs: {pairs}" if len(panel.members) > 2 else "")
    )


def flagged_text(flag: FlaggedCheck, margin: float) -> str:
    """``⚠ panel disagrees on run #1 "tests pass": a 10 · b 5 (50 points > 25)``."""
    where = f"{flag.scenario_key} × {flag.agent_name} " if flag.scenario_key else ""
    grades = " · ".join(f"{m} {g}" for m, g in flag.grades.items())
    return (
        f"⚠ panel disagrees on {where}run #{flag.run_index} {flag.check!r}: {grades} "
        f"({_n(flag.spread)} points > {_n(margin)})"
    )


def panel_lines(panel: PanelAgreement | None, indent: str = "    ") -> list[str]:
    """Under a pair judged by a panel: its agreement, then one line per flagged check."""
    if panel is None:
        return []
    return [indent + panel_text(panel)] + [
        indent + flagged_text(f, panel.margin) for f in panel.flagged
    ]


def suite_panel_lines(summary: Summary) -> list[str]:
    """``  Panel:  panel of 3 (…): Krippendorff α 0.62 over 18 check grades …`` and the
    count of flagged checks over every pair."""
    panel = summary.panel
    if panel is None:
        return []
    flagged = len(panel.flagged)
    return [
        f"  Panel:  {panel_text(panel)} · {flagged} check grade{'s' if flagged != 1 else ''} "
        f"flagged (> {_n(panel.margin)} points apart)"
    ]


def delta_cell(interval: DeltaInterval | None) -> str:
    """``+9.3 [-3.9, 22.6]``: B − A of the mean composites (Welch); ``-`` without one."""
    if interval is None:
        return "-"
    return f"{interval.mean_delta:+.1f} [{_n(interval.low)}, {_n(interval.high)}]"


def paired_line(test: PairedTest | None) -> str | None:
    """``Paired t test over 3 pairs: mean Δ +4.0 [1.5, 6.5], t 6.93, p = 0.0202``."""
    if test is None:
        return None
    if test.p_value is None or test.mean_delta is None:
        return f"Paired t test: {test.note}"
    interval = "" if test.low is None else f" [{_n(test.low)}, {_n(test.high or 0)}]"
    t = "" if test.t is None else f", t {test.t:g} ({test.df} df)"
    text = (
        f"Paired t test over {test.n} pairs (mean composites, B − A): "
        f"mean Δ {test.mean_delta:+.1f}{interval}{t}, p = {test.p_value:.4g}"
    )
    return text + (f" ({test.note})" if test.note else "")
