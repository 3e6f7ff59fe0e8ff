"""Inline SVG charts, drawn on the server so the page needs no charting code.

Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` (its text
alternative) and comes with a one-line text version the page shows beside it. Colours are
CSS classes (``cat-env``, ``band-90`` …) so the light and dark schemes restyle them. This
module computes the geometry; the markup is ``assets/charts.svg``, filled through
:mod:`._markup` (every slot escaped), so no text reaches a chart unescaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from axis_eval.report.html._markup import Markup, fragments

_TEMPLATES = fragments("charts.svg")


def _fragment(name: str, /, **values: object) -> Markup:
    return _TEMPLATES[name].render(values)


def band(score: float | None) -> str:
    """The colour band of a 0–100 score: AXIS's 90 / 75 / 50 thresholds."""
    if score is None:
        return "band-none"
    if score >= 90:
        return "band-90"
    if score >= 75:
        return "band-75"
    if score >= 50:
        return "band-50"
    return "band-0"


def _svg(width: int, height: int, title: str, desc: str, body: list[Markup], cls: str) -> Markup:
    return _fragment("svg", cls=cls, width=width, height=height, title=title, desc=desc, body=body)


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class RunDot:
    """One run on the distribution chart."""

    run_index: int
    score: int
    representative: bool


def distribution(dots: Sequence[RunDot], median: float | None, label: str) -> tuple[Markup, str]:
    """Run composites as dots on a 0–100 axis with the median; (svg, text alternative)."""
    width, height, left, right = 360, 58, 12, 12
    span = width - left - right

    def x(score: float) -> float:
        return left + span * max(0.0, min(100.0, score)) / 100

    body = [_fragment("axis", x1=left, x2=width - right)]
    for tick in (0, 50, 75, 90, 100):
        body.append(_fragment("tick", x=_num(x(tick)), label=tick))
    if median is not None:
        body.append(_fragment("median", x=_num(x(median)), label=_num(median)))
    # Runs with the same score stack upwards so none hides another.
    seen: dict[int, int] = {}
    for dot in dots:
        level = seen.get(dot.score, 0)
        seen[dot.score] = level + 1
        body.append(
            _fragment(
                "dot",
                cls=f"dot {band(dot.score)}" + (" rep" if dot.representative else ""),
                x=_num(x(dot.score)),
                y=34 - 9 * level,
                r=6 if dot.representative else 4.5,
                title=f"run #{dot.run_index}: {dot.score}"
                + (" (representative)" if dot.representative else ""),
            )
        )
    text = distribution_text(dots, median)
    title = f"Score distribution of {label}"
    return _svg(width, height, title, text, body, "distribution"), text


def distribution_text(dots: Sequence[RunDot], median: float | None) -> str:
    """The text alternative of :func:`distribution`."""
    parts = [
        f"#{d.run_index} {d.score}{' (representative)' if d.representative else ''}" for d in dots
    ]
    text = "Runs: " + (", ".join(parts) if parts else "none scored")
    if median is not None:
        text += f"; median {_num(median)}"
    return text


@dataclass(frozen=True)
class AgentBar:
    """One agent's mean representative composite over its scored pairs."""

    agent: str
    mean: float
    pairs: int


def agent_bars(bars: Sequence[AgentBar]) -> tuple[Markup, str]:
    """Composite per agent as horizontal bars; (svg, text alternative)."""
    label_w, bar_w, row_h = 150, 260, 22
    width = label_w + bar_w + 70
    height = row_h * max(1, len(bars)) + 8
    body: list[Markup] = []
    for i, bar in enumerate(bars):
        y = 4 + i * row_h
        w = bar_w * max(0.0, min(100.0, bar.mean)) / 100
        mean = _num(bar.mean)
        body.append(
            _fragment(
                "agent_bar",
                label_x=label_w - 6,
                text_y=y + 14,
                name=bar.agent if len(bar.agent) <= 22 else bar.agent[:21] + "…",
                band=band(bar.mean),
                x=label_w,
                y=y + 2,
                width=_num(w),
                height=row_h - 6,
                agent=bar.agent,
                mean=mean,
                value_x=_num(label_w + w + 6),
                pairs=bar.pairs,
            )
        )
    text = "; ".join(
        f"{b.agent} {_num(b.mean)} over {b.pairs} pair{'s' if b.pairs != 1 else ''}" for b in bars
    )
    text = text or "no scored pairs"
    return _svg(width, height, "AXIS Result per agent", text, body, "agents"), text


@dataclass(frozen=True)
class Bar:
    """One interaction on the waterfall."""

    id: int
    tool: str
    category: str
    """``env``, ``svc`` or ``agent``: the category that times it (colours the bar)."""
    categories: str
    start_ms: int
    duration_ms: int | None
    tier: str
    error: bool


WATERFALL_ROWS = 300
"""Bars drawn at most; the interaction table below the chart lists every interaction."""


def _tick_step(total_ms: float) -> float:
    """A 1/2/5 × 10^n step giving 3 to 8 ticks."""
    raw = max(total_ms, 1) / 5
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * power:
            return float(mult * power)
    return float(10 * power)


def _fmt_ms(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}".rstrip("0").rstrip(".") + "s"
    return f"{int(ms // 60_000)}m{int(ms % 60_000) // 1000:02d}s"


def waterfall(bars: Sequence[Bar], total_ms: int) -> tuple[Markup, str]:
    """Interactions positioned by start and duration on the wall clock; (svg, text)."""
    shown = bars[:WATERFALL_ROWS]
    label_w, plot_w, row_h, top = 150, 460, 14, 18
    width = label_w + plot_w + 10
    height = top + row_h * max(1, len(shown)) + 4
    end = max([total_ms, *(b.start_ms + (b.duration_ms or 0) for b in shown), 1])

    def x(ms: float) -> float:
        return label_w + plot_w * ms / end

    body: list[Markup] = []
    step = _tick_step(end)
    tick = 0.0
    while tick <= end + 0.5:
        body.append(
            _fragment(
                "grid_tick",
                x=_num(x(tick)),
                y1=top - 4,
                y2=height,
                label_y=top - 7,
                label=_fmt_ms(tick),
            )
        )
        tick += step
    for i, bar in enumerate(shown):
        y = top + i * row_h
        dur = bar.duration_ms or 0
        name = f"#{bar.id} {bar.tool}"
        timing = "unknown duration" if bar.duration_ms is None else _fmt_ms(dur)
        tier = bar.tier.replace(" ", "-")
        body.append(
            _fragment(
                "waterfall_bar",
                label_x=label_w - 6,
                text_y=y + 10,
                name=name if len(name) <= 24 else name[:23] + "…",
                cls=f"wf cat-{bar.category} tier-{tier}{' error' if bar.error else ''}",
                x=_num(x(bar.start_ms)),
                y=y + 2,
                width=_num(max(2.0, plot_w * dur / end)),
                height=row_h - 4,
                tip=f"#{bar.id} {bar.tool} · {bar.categories} · {timing} ({bar.tier}) · "
                f"starts at {_fmt_ms(bar.start_ms)}{' · error' if bar.error else ''}",
            )
        )
    counts: dict[str, int] = {}
    for bar in bars:
        counts[bar.category] = counts.get(bar.category, 0) + 1
    errors = sum(b.error for b in bars)
    text = (
        f"{len(bars)} interactions over {_fmt_ms(end)}: "
        + ", ".join(f"{n} {c}" for c, n in sorted(counts.items()))
        + (f"; {errors} with errors" if errors else "")
        + (f"; the first {WATERFALL_ROWS} drawn" if len(bars) > WATERFALL_ROWS else "")
    )
    return _svg(width, height, "Interaction waterfall", text, body, "waterfall"), text
