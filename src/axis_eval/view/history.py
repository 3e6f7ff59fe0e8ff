"""Page (3): a pair's or an agent's composite and four dimensions over time, as inline SVG.

Each report is one point per series (the pair's headline scores; for an agent, the mean of
its pairs' headlines), the run spread (min–max of the scored runs' composites) drawn where a
pair has repeats, and the baseline's band (its value ± max(1, 2σ)) where a baseline is set.
Every point links to that report's pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import fmean

from axis_eval._types import SCORES, camel
from axis_eval.report.html._markup import escape
from axis_eval.runs.aggregate import noise_band, scored_composites
from axis_eval.runs.baselines import read_baseline
from axis_eval.view.catalog import Catalog
from axis_eval.view.catalog_models import Head, HeadPair
from axis_eval.view.layout import SERIES_COLORS, Links, page

NAMES = tuple(camel(s) for s in SCORES)
LABELS = dict(zip(NAMES, ("AXIS", "Goal", "Environment", "Service", "Agent"), strict=True))


@dataclass
class Point:
    report_id: str
    started_at: str
    values: dict[str, float | None]
    spread: tuple[float, float] | None = None
    href: str = ""


@dataclass
class Series:
    title: str
    points: list[Point] = field(default_factory=list)
    bands: dict[str, tuple[float, float]] = field(default_factory=dict)


def _values(pairs: list[HeadPair]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for score_name, name in zip(SCORES, NAMES, strict=True):
        got = [
            float(v)
            for p in pairs
            if p.score is not None
            and not p.score.withheld
            and p.representative_run_index is not None
            and (v := p.score.dimension(score_name)) is not None
        ]
        out[name] = round(fmean(got), 2) if got else None
    return out


def _spread(pairs: list[HeadPair]) -> tuple[float, float] | None:
    if not any(p.run_count > 1 for p in pairs):
        return None
    runs = [v for p in pairs for v in scored_composites(p.runs).values()]
    return (min(runs), max(runs)) if runs else None


def _ordered(catalog: Catalog) -> list[tuple[str, Head]]:
    """Every report's light read, oldest first (a history never reads whole manifests)."""
    out = []
    for line in reversed(catalog.headlines()):
        head = catalog.head(line.report_id)
        if head is not None:
            out.append((line.report_id, head))
    return out


def _points(
    catalog: Catalog, title: str, keep: Callable[[HeadPair], bool], href: Callable[[str], str]
) -> Series:
    """One point per report holding a pair that ``keep`` selects, oldest first."""
    series = Series(title)
    for rid, manifest in _ordered(catalog):
        pairs = [p for p in manifest.results if keep(p)]
        if pairs:
            series.points.append(
                Point(rid, manifest.started_at, _values(pairs), _spread(pairs), href(rid))
            )
    return series


def pair_series(catalog: Catalog, scenario: str, agent: str, links: Links) -> Series:
    series = _points(
        catalog,
        f"{scenario} · {agent}",
        lambda p: p.scenario_key == scenario and p.agent_name == agent,
        lambda rid: links.report(rid, scenario=scenario, agent=agent),
    )
    baseline = read_baseline(catalog.config_dir) if catalog.config_dir is not None else None
    entry = baseline.results.get(scenario, {}).get(agent) if baseline is not None else None
    if entry is not None:
        for score_name, name in zip(SCORES, NAMES, strict=True):
            value = float(getattr(entry, score_name))
            band = noise_band(entry.stdev) if name == "axisScore" else 1.0
            series.bands[name] = (value - band, value + band)
    return series


def agent_series(catalog: Catalog, agent: str, links: Links) -> Series:
    return _points(
        catalog,
        f"agent {agent}",
        lambda p: p.agent_name == agent,
        lambda rid: links.report(rid, agent=agent),
    )


W, H, PAD = 760, 300, 36
MAX_X_LABELS = {10: 8, 16: 6, 19: 5}
"""Labels under the x axis at most, by label length (evenly spread, the first and last
always): more would overlap."""


def x_labels(started: list[str]) -> dict[int, str]:
    """Point index → its label: ``MM-DD``, with ``HH:MM`` (then ``:SS``) added when two
    points would read the same (CI runs several times a day)."""
    text: list[str] = []
    width = 10
    for width in MAX_X_LABELS:  # through the day, the minute, the second
        text = [s[5:width].replace("T", " ") for s in started]
        if len(set(text)) == len(text):
            break
    n, most = len(text), MAX_X_LABELS[width]
    every = max(1, -(-(n - 1) // (most - 1))) if n > most else 1
    keep = sorted({*range(0, n, every), n - 1}) if n else []
    if len(keep) > 1 and keep[-1] - keep[-2] < every:  # the last one would crowd its neighbour
        keep.pop(-2)
    return {i: text[i] for i in keep}


def chart(series: Series) -> str:
    """The SVG: y 0–100, one x step per report, a polyline and linked dots per score."""
    n = len(series.points)
    step = (W - 2 * PAD) / max(1, n - 1)

    def x(i: int) -> float:
        return PAD + (i * step if n > 1 else (W - 2 * PAD) / 2)

    def y(v: float) -> float:
        return H - PAD - v / 100 * (H - 2 * PAD)

    parts = [
        f'<line class="grid" x1="{PAD}" x2="{W - PAD}" y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
        f'<text x="4" y="{y(t) + 4:.1f}">{t}</text>'
        for t in (0, 25, 50, 75, 100)
    ]
    for name, (low, high) in series.bands.items():
        if name == "axisScore":
            parts.append(
                f'<rect class="band" data-band="{name}" x="{PAD}" width="{W - 2 * PAD}" '
                f'y="{y(min(100, high)):.1f}" height="{y(max(0, low)) - y(min(100, high)):.1f}">'
                f"<title>baseline {LABELS[name]} {low:.1f}–{high:.1f}</title></rect>"
            )
    for i, pt in enumerate(series.points):
        if pt.spread is not None:
            lo, hi = pt.spread
            parts.append(
                f'<line class="spread" data-report="{escape(pt.report_id)}" '
                f'data-low="{lo:g}" data-high="{hi:g}" x1="{x(i):.1f}" x2="{x(i):.1f}" '
                f'y1="{y(lo):.1f}" y2="{y(hi):.1f}"><title>runs {lo:.0f}–{hi:.0f}</title></line>'
            )
    for name in NAMES:
        color = SERIES_COLORS[name]
        coords = [
            (i, v) for i, pt in enumerate(series.points) if (v := pt.values.get(name)) is not None
        ]
        if len(coords) > 1:
            pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in coords)
            parts.append(f'<polyline stroke="{color}" points="{pts}"/>')
        for i, v in coords:
            pt = series.points[i]
            rid = escape(pt.report_id)
            radius = 5 if name == "axisScore" else 3.5
            parts.append(
                f'<a href="{pt.href}"><circle class="point" data-series="{name}" '
                f'data-report="{rid}" data-value="{v:g}" cx="{x(i):.1f}" cy="{y(v):.1f}" '
                f'r="{radius}" fill="{color}"><title>{rid} {LABELS[name]} {v:g}</title>'
                "</circle></a>"
            )
    for i, text in x_labels([pt.started_at for pt in series.points]).items():
        # the end labels lean inwards: centred on the first or last point they would be cut
        anchor = "middle" if n == 1 else "start" if i == 0 else "end" if i == n - 1 else "middle"
        edge = {"start": -6, "end": 6}.get(anchor, 0)
        parts.append(
            f'<text class="x" x="{x(i) + edge:.1f}" y="{H - 8}" '
            f'text-anchor="{anchor}">{escape(text)}</text>'
        )
    label = escape(series.title)
    return (
        f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{label}">'
        f"{''.join(parts)}</svg>"
    )


def legend() -> str:
    """One swatch per series (inline SVG: the page allows no inline style)."""
    items = "".join(
        f'<span><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" '
        f'fill="{SERIES_COLORS[n]}"/></svg> {LABELS[n]}</span>'
        for n in NAMES
    )
    return f'<p class="legend muted">{items} · bars: run spread · shaded: baseline band</p>'


def history_page(series: Series, links: Links) -> str:
    rows = "".join(
        f'<tr class="point"><td class="nw"><a href="{pt.href}">{escape(pt.report_id)}</a></td>'
        f'<td class="nw">{escape(pt.started_at[:19])}</td>'
        + "".join(
            f'<td class="num">{"—" if pt.values[n] is None else f"{pt.values[n]:g}"}</td>'
            for n in NAMES
        )
        + f"<td>{'' if pt.spread is None else f'{pt.spread[0]:.0f}–{pt.spread[1]:.0f}'}</td></tr>"
        for pt in series.points
    )
    bands = "".join(
        f"<li>baseline {LABELS[k]}: {lo:.1f}–{hi:.1f}</li>" for k, (lo, hi) in series.bands.items()
    )
    body = (
        f"<h1>History: {escape(series.title)}</h1>{chart(series)}"
        f"{legend()}"
        f"<ul>{bands}</ul><table><thead><tr><th>Report</th><th>Started</th>"
        + "".join(f'<th class="num">{LABELS[n]}</th>' for n in NAMES)
        + f"<th>Runs</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return page(f"History {series.title}", body, links)
