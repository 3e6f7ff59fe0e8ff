"""The page: the summary as static HTML, the lazy payloads, and the template around them.

The summary (header, per-agent chart, the pairs table, one closed ``<details>`` per pair) is
plain HTML, so the browser paints it before any script runs. Pair details and transcripts
are gzip+base64 payloads in inert ``<script type="application/x-axis-gzip">`` elements that
the page's script decodes when they are opened. The script sits after the summary and
before the payloads (template.html), so the summary is interactive while the parser still
reads the payloads (megabytes at 1,000 jobs). Every value from the report passes through
:func:`~axis_eval.report.html._svg.esc`; payloads are base64 and cannot close their element.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any

from axis_eval.report.html._svg import AgentBar, agent_bars, band, esc
from axis_eval.report.models import PairEntry, ReportManifest, RunEntry
from axis_eval.transcript.sparse_index import format_ms

if TYPE_CHECKING:  # annotations only: a run without a baseline never loads them
    from axis_eval.runs.baseline_models import BaselineComparison, ComparisonEntry

PAYLOAD_TYPE = "application/x-axis-gzip"
DIMENSION_FIELDS = (
    ("axisScore", "axis_score", "AXIS"),
    ("goalAchievement", "goal_achievement", "Goal"),
    ("environment", "environment", "Env"),
    ("service", "service", "Svc"),
    ("agent", "agent", "Agent"),
)
_MARKER = re.compile(r"\{\{(\w+)\}\}")


def asset(name: str) -> str:
    """A file shipped beside this module (template, stylesheet, script)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def encode_payload(value: Any) -> str:
    """JSON → gzip → base64 (``mtime=0``: the same report gives the same bytes)."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def fill(template: str, values: dict[str, str]) -> str:
    """Replace ``{{name}}`` markers in one pass (a value containing a marker stays as is)."""
    return _MARKER.sub(lambda m: values[m.group(1)], template)


def money(value: float | None, estimated: bool = False) -> str:
    """``$0.0123``, ``≈$0.0123`` when computed from a price table, ``–`` when unknown."""
    if value is None:
        return "–"
    return f"{'≈' if estimated else ''}${value:.4f}"


duration = format_ms
"""``840ms``, ``1.2s``, ``2m05s`` (the sparse index's format)."""


@dataclass
class Spend:
    """Agent and judge spend summed over runs."""

    agent: float = 0.0
    agent_known: bool = False
    agent_estimated: bool = False
    judge: float = 0.0
    judge_known: bool = False
    judge_estimated: bool = False

    def add(self, runs: Iterable[RunEntry]) -> Spend:
        for run in runs:
            if run.total_cost_usd is not None:
                self.agent += run.total_cost_usd
                self.agent_known = True
                self.agent_estimated |= run.cost_estimated
            spend = run.score.judge if run.score else None
            if spend is not None and spend.cost_usd is not None:
                self.judge += spend.cost_usd
                self.judge_known = True
                self.judge_estimated |= spend.cost_estimated
        return self

    @property
    def agent_total(self) -> float | None:
        """The agents' cost; None when no run reported one."""
        return self.agent if self.agent_known else None

    @property
    def judge_total(self) -> float | None:
        """The judges' cost; None when no judge reported one."""
        return self.judge if self.judge_known else None

    def text(self) -> str:
        """``$0.0300 + ≈$0.0167 judge``."""
        agent = money(self.agent_total, self.agent_estimated)
        if self.judge_total is None:
            return agent
        return f"{agent} + {money(self.judge_total, self.judge_estimated)} judge"


@dataclass
class Page:
    """What the template is filled with."""

    manifest: ReportManifest
    comparison: BaselineComparison | None
    payloads: list[tuple[str, str]] = field(default_factory=list)
    """``(id, base64)`` of every lazy payload, in page order."""


def _pill(pair: PairEntry) -> str:
    n = pair.run_count
    text = f"{n} run{'s' if n != 1 else ''}"
    sd = pair.spread.axis_score.stdev if pair.spread else None
    if n > 1:
        text += " · σ " + ("–" if sd is None else f"{sd:.1f}")
    return text


def _reliability(pair: PairEntry) -> str:
    rel = pair.reliability
    if rel is None:
        return "–"
    text = f"{rel.succeeded}/{rel.total}"
    return text + (f" ({rel.withheld} withheld)" if rel.withheld else "")


def _pass_rates(pair: PairEntry) -> str:
    rates = pair.pass_rates
    if rates is None or rates.n == 0:
        return "–"
    k = len(rates.pass_at_k)
    parts = [f"pass@{k} {rates.pass_at_k[-1]:.2f}"] if k else []
    if k > 1:
        parts.append(f"pass^{k} {rates.pass_hat_k[-1]:.2f}")
    parts.append(f"{rates.passed}/{rates.n} ≥ {rates.pass_score}")
    return " · ".join(parts)


def _status(pair: PairEntry) -> str:
    marks = {"completed": "✓ pass", "failed": "✗ fail", "cancelled": "○ cancelled"}
    return marks[pair.status]


def _baseline_cell(entry: ComparisonEntry | None) -> str:
    if entry is None:
        return '<td class="muted">new</td>'
    delta = "–" if entry.delta is None else f"{entry.delta:+.0f}"
    cls = "regressed" if entry.regressed else entry.verdict
    title = f"baseline {entry.baseline:g}, band ±{entry.band:g}"
    return f'<td class="delta {esc(cls)}" title="{esc(title)}">{esc(delta)} {esc(cls)}</td>'


def summary_row(
    number: int, pair: PairEntry, comparison: dict[tuple[str, str], ComparisonEntry] | None
) -> str:
    """One ``tr.pair-row`` of ``table#summary`` (the DOM contract the benchmark relies on)."""
    score = pair.score if pair.score is not None and not pair.score.withheld else None
    cells = [
        f'<tr class="pair-row status-{pair.status}" data-scenario="{esc(pair.scenario_key)}" '
        f'data-agent="{esc(pair.agent_name)}" data-pair="{number}">',
        f'<th scope="row"><a class="pair-link" href="#pair-{number}" '
        f'title="{esc(pair.scenario_name)}">{esc(pair.scenario_key)}</a></th>',
        f"<td>{esc(pair.agent_name)}</td>",
        f'<td class="pill">{esc(_pill(pair))}</td>',
    ]
    withheld = pair.score.withheld_reason if pair.score and pair.score.withheld else None
    for name, attr, _ in DIMENSION_FIELDS:
        value: int | None = getattr(score, attr) if score else None
        title = f' title="withheld: {esc(withheld)}"' if withheld and name == "axisScore" else ""
        cells.append(
            f'<td data-field="{name}" class="num {band(value)}"{title}>'
            f"{'–' if value is None else value}</td>"
        )
    cells += [
        f"<td>{esc(_reliability(pair))}</td>",
        f"<td>{esc(_pass_rates(pair))}</td>",
        f'<td class="num">{esc(Spend().add(pair.runs).text())}</td>',
    ]
    if comparison is not None:
        cells.append(_baseline_cell(comparison.get((pair.scenario_key, pair.agent_name))))
    title = f' title="{esc(pair.error)}"' if pair.error else ""
    cells.append(f'<td class="status"{title}>{esc(_status(pair))}</td></tr>')
    return "".join(cells)


def summary_table(
    pairs: list[PairEntry], comparison: dict[tuple[str, str], ComparisonEntry] | None
) -> str:
    """``table#summary``: one row per pair."""
    heads = ["Scenario", "Agent", "Runs"] + [label for _, _, label in DIMENSION_FIELDS]
    heads += ["Reliability", "pass@k", "Spend"]
    if comparison is not None:
        heads.append("vs baseline")
    heads.append("Status")
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in heads)
    rows = "\n".join(summary_row(i, p, comparison) for i, p in enumerate(pairs))
    return (
        '<table id="summary" class="grid"><caption>Pairs: the representative run of each '
        "scenario × agent</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table>"
    )


def pair_details(number: int, pair: PairEntry, with_transcripts: bool) -> str:
    """A pair's closed detail container; its body is rendered from payload ``p<number>``."""
    score = pair.score.axis_score if pair.score else None
    shown = "–" if score is None else str(score)
    transcripts = f' data-transcripts="t{number}"' if with_transcripts else ""
    return (
        f'<details class="pair" id="pair-{number}" data-pair-detail '
        f'data-scenario="{esc(pair.scenario_key)}" data-agent="{esc(pair.agent_name)}" '
        f'data-payload="p{number}"{transcripts}><summary>{esc(pair.scenario_key)} · '
        f"{esc(pair.agent_name)} — {esc(shown)} · {esc(_status(pair))}</summary></details>"
    )


def agents_chart(pairs: list[PairEntry]) -> str:
    """The composite per agent (mean of the representatives), as a figure with its text."""
    by_agent: dict[str, list[int]] = {}
    for pair in pairs:
        value = pair.score.axis_score if pair.score else None
        if value is not None:
            by_agent.setdefault(pair.agent_name, []).append(value)
    if not by_agent:
        return ""
    bars = [AgentBar(a, sum(v) / len(v), len(v)) for a, v in sorted(by_agent.items())]
    svg, text = agent_bars(bars)
    return (
        f'<figure class="chart-figure">{svg}<figcaption>AXIS Result per agent '
        f"(mean of the representatives): {esc(text)}</figcaption></figure>"
    )


def header(manifest: ReportManifest, comparison: BaselineComparison | None) -> str:
    """Title, facts, headline cards and the baseline summary."""
    s = manifest.summary
    spend = Spend()
    for pair in manifest.results:
        spend.add(pair.runs)
    avg = s.average_axis_score
    facts = [
        ("Report ID", manifest.report_id),
        ("Generated", manifest.timestamp),
        ("Duration", duration(manifest.duration_ms)),
        ("State", manifest.state),
        ("Config", manifest.config_path),
        ("Profile", manifest.profile or "–"),
        ("Tool", f"{manifest.tool.name} {manifest.tool.version}"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts)
    cards = [
        (
            "AXIS Result (average)",
            "–" if avg is None else f"{avg:g}",
            band(avg),
        ),
        ("Pairs", f"{s.completed} passed / {s.total}", ""),
        ("Failed", str(s.failed), "bad" if s.failed else ""),
        ("Runs", f"{s.runs_completed} completed / {s.runs_total}", ""),
        ("Agent cost", money(spend.agent_total, spend.agent_estimated), ""),
        ("Judge cost", money(spend.judge_total, spend.judge_estimated), ""),
    ]
    if s.cancelled:
        cards.insert(3, ("Cancelled", str(s.cancelled), "bad"))
    if s.skipped:
        cards.append(("Skipped", str(s.skipped), ""))
    card_html = "".join(
        f'<div class="card {cls}"><div class="card-label">{esc(label)}</div>'
        f'<div class="card-value">{esc(value)}</div></div>'
        for label, value, cls in cards
    )
    title = f"AXIS Report — {manifest.name or manifest.report_id}"
    parts = [
        f'<header><h1>{esc(title)}</h1><dl class="facts">{dl}</dl>'
        f'<div class="cards">{card_html}</div>'
    ]
    if comparison is not None:
        c = comparison.summary
        parts.append(
            f'<p class="baseline-summary">Compared with baseline '
            f"<strong>{esc(comparison.baseline_name)}</strong>: {c.improved} improved, "
            f"{c.regressed} regressed, {c.unchanged} unchanged, {c.unscored} unscored, "
            f"{c.new_pairs} new, {c.vanished_pairs} vanished.</p>"
        )
    parts.append("</header>")
    return "".join(parts)


def notes(manifest: ReportManifest, comparison: BaselineComparison | None) -> str:
    """Warnings, load failures, skipped pairs, suite hooks' notes, vanished baseline pairs."""
    out: list[str] = []
    if manifest.warnings:
        items = "".join(f"<li>{esc(w)}</li>" for w in manifest.warnings)
        out.append(f"<h2>Warnings</h2><ul>{items}</ul>")
    if manifest.load_failures:
        items = "".join(
            f"<li><code>{esc(f.path)}</code>: {esc(f.error)}</li>" for f in manifest.load_failures
        )
        out.append(f"<h2>Scenarios that failed to load</h2><ul>{items}</ul>")
    if manifest.skipped:
        out.append(f"<h2>Skipped</h2><p>{esc(', '.join(manifest.skipped))}</p>")
    for label, text in (
        ("Before all: notes", manifest.before_all_output),
        ("After all: notes", manifest.after_all_output),
    ):
        if text:
            out.append(f'<h2>{esc(label)}</h2><pre class="notes">{esc(text)}</pre>')
    if comparison is not None and comparison.vanished:
        items = "".join(
            f"<li>{esc(v.scenario_key)} · {esc(v.agent_name)}</li>" for v in comparison.vanished
        )
        out.append(f"<h2>In the baseline, not in this report</h2><ul>{items}</ul>")
    return f'<section id="notes">{"".join(out)}</section>' if out else ""


def config_section() -> str:
    """The resolved config, rendered from payload ``config`` when opened."""
    return (
        '<details id="config" data-payload="config"><summary>Resolved configuration '
        "(secrets redacted)</summary></details>"
    )


def payload_scripts(payloads: list[tuple[str, str]]) -> str:
    """The inert payload elements (base64: nothing in them can close the element)."""
    return "\n".join(
        f'<script type="{PAYLOAD_TYPE}" data-payload="{esc(pid)}">{data}</script>'
        for pid, data in payloads
    )


def body(page: Page, details: list[str], rows_html: str) -> str:
    """Everything between ``<body>`` and the payloads."""
    manifest = page.manifest
    filter_box = (
        '<p class="filter"><label>Filter pairs <input id="pair-filter" type="search" '
        'placeholder="scenario or agent" autocomplete="off"></label> '
        '<span id="filter-count" aria-live="polite"></span></p>'
        if len(manifest.results) > 10
        else ""
    )
    pairs_html = "\n".join(details)
    return "\n".join(
        [
            header(manifest, page.comparison),
            '<main><section id="overview"><h2>Summary</h2>',
            agents_chart(manifest.results),
            filter_box,
            rows_html,
            "</section>",
            notes(manifest, page.comparison),
            f'<section id="pairs"><h2>Pairs</h2>\n{pairs_html}\n</section>',
            f'<section id="configuration">{config_section()}</section></main>',
            "<footer>Written by axis-eval. Self-contained: no network requests; pair details "
            "and transcripts are decoded when opened.</footer>",
        ]
    )


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(js: str, css: str) -> str:
    """Only our own script and stylesheet run (by hash); no request of any kind.

    An injected ``<script>`` or ``onerror=`` would not run even if escaping ever failed, and
    the browser itself refuses fetches, images and fonts from anywhere. ``'unsafe-eval'``
    lets test drivers (Playwright's ``wait_for_function``) evaluate code in the page; it
    runs nothing by itself (our script never calls eval) and only code already running could
    use it.
    """
    return (
        f"default-src 'none'; script-src {_sha256(js)} 'unsafe-eval'; style-src {_sha256(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def document(page: Page, details: list[str], rows_html: str) -> str:
    """The whole page."""
    js = asset("report.js")
    css = asset("report.css")
    # Our own script and stylesheet must not be able to close their elements either.
    if "</script" in js.lower() or "</style" in css.lower():
        raise ValueError("report.js / report.css contain a closing tag")
    manifest = page.manifest
    return fill(
        asset("template.html"),
        {
            "csp": content_security_policy(js, css),
            "title": esc(f"AXIS Report — {manifest.report_id}"),
            "report_id": esc(manifest.report_id),
            "css": css,
            "body": body(page, details, rows_html),
            "payloads": payload_scripts(page.payloads),
            "js": js,
        },
    )
