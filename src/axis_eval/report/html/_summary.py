"""The page's static part: header, per-agent chart, pairs table, notes, closed pair details.

It is plain HTML, so the browser paints it before any script runs; what each pair shows
when opened comes from its payload (:mod:`._payload`). The values are computed here and
the markup is ``assets/page.html``'s fragments, filled through :mod:`._markup` (every slot
escaped for where it sits).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from axis_eval.report.html._charts import AgentBar, agent_bars, band
from axis_eval.report.html._markup import EMPTY, Markup, fragments
from axis_eval.report.models import PairEntry, ReportManifest, RunEntry
from axis_eval.report.render_stats import agent_interval_text, suite_panel_lines
from axis_eval.runs.spend import agent_text, judge_text, spend_of
from axis_eval.transcript.sparse_index import format_ms

if TYPE_CHECKING:  # annotations only: a run without a baseline never loads them
    from axis_eval.runs.baseline_models import BaselineComparison, ComparisonEntry

DIMENSION_FIELDS = (
    ("axisScore", "axis_score", "AXIS"),
    ("goalAchievement", "goal_achievement", "Goal"),
    ("environment", "environment", "Env"),
    ("service", "service", "Svc"),
    ("agent", "agent", "Agent"),
)
BASELINE_COUNTS = ("improved", "regressed", "unchanged", "unscored", "new_pairs", "vanished_pairs")
"""The baseline comparison's counts the header states (slots of ``baseline_summary``)."""


_TEMPLATES = fragments("page.html")


def fragment(name: str, /, **values: object) -> Markup:
    """``assets/page.html``'s fragment ``name``, filled."""
    return _TEMPLATES[name].render(values)


duration = format_ms
"""``840ms``, ``1.2s``, ``2m05s`` (the sparse index's format)."""


def spend_cell(runs: Iterable[RunEntry]) -> str:
    """A pair's spend: ``$0.0300 + ≈$0.0167 judge``; simulated usage (the scripted model
    server) as ``simulated (N tok)``, never a dollar figure."""
    spend = spend_of(runs)
    agent = agent_text(spend)
    if spend.judge_cost_usd is None and not spend.simulated_judge_tokens:
        return agent
    return f"{agent} + {judge_text(spend)} judge"


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


def _baseline_cell(entry: ComparisonEntry | None) -> Markup:
    if entry is None:
        return fragment("baseline_new")
    return fragment(
        "baseline_delta",
        cls="regressed" if entry.regressed else entry.verdict,
        baseline=f"{entry.baseline:g}",
        band=f"{entry.band:g}",
        delta="–" if entry.delta is None else f"{entry.delta:+.0f}",
    )


def _score_cells(pair: PairEntry) -> list[Markup]:
    score = pair.score if pair.score is not None and not pair.score.withheld else None
    withheld = pair.score.withheld_reason if pair.score and pair.score.withheld else None
    cells = []
    for name, attr, _ in DIMENSION_FIELDS:
        value: int | None = getattr(score, attr) if score else None
        shown = "–" if value is None else value
        if withheld and name == "axisScore":
            cells.append(
                fragment(
                    "score_withheld", field=name, band=band(value), value=shown, reason=withheld
                )
            )
        else:
            cells.append(fragment("score", field=name, band=band(value), value=shown))
    return cells


def summary_row(
    number: int, pair: PairEntry, comparison: dict[tuple[str, str], ComparisonEntry] | None
) -> Markup:
    """One ``tr.pair-row`` of ``table#summary`` (the DOM contract the benchmark relies on)."""
    baseline = EMPTY
    if comparison is not None:
        baseline = _baseline_cell(comparison.get((pair.scenario_key, pair.agent_name)))
    status = _status(pair)
    return fragment(
        "row",
        status=pair.status,
        scenario=pair.scenario_key,
        agent=pair.agent_name,
        number=number,
        scenario_name=pair.scenario_name,
        pill=_pill(pair),
        scores=_score_cells(pair),
        reliability=_reliability(pair),
        pass_rates=_pass_rates(pair),
        spend=spend_cell(pair.runs),
        baseline=baseline,
        status_cell=fragment("status_error", error=pair.error, text=status)
        if pair.error
        else fragment("status", text=status),
    )


def summary_table(
    pairs: list[PairEntry], comparison: dict[tuple[str, str], ComparisonEntry] | None
) -> Markup:
    """``table#summary``: one row per pair."""
    heads = ["Scenario", "Agent", "Runs"] + [label for _, _, label in DIMENSION_FIELDS]
    heads += ["Reliability", "pass@k", "Spend"]
    if comparison is not None:
        heads.append("vs baseline")
    heads.append("Status")
    return fragment(
        "summary_table",
        heads=[fragment("head", label=h) for h in heads],
        rows=[summary_row(i, p, comparison) for i, p in enumerate(pairs)],
    )


def pair_details(number: int, pair: PairEntry, with_transcripts: bool) -> Markup:
    """A pair's closed detail container; its body is rendered from payload ``p<number>``."""
    score = pair.score.axis_score if pair.score else None
    return fragment(
        "pair_with_transcripts" if with_transcripts else "pair",
        number=number,
        scenario=pair.scenario_key,
        agent=pair.agent_name,
        score="–" if score is None else score,
        status=_status(pair),
    )


def agents_chart(pairs: list[PairEntry]) -> Markup:
    """The composite per agent (mean of the representatives), as a figure with its text."""
    by_agent: dict[str, list[int]] = {}
    for pair in pairs:
        value = pair.score.axis_score if pair.score else None
        if value is not None:
            by_agent.setdefault(pair.agent_name, []).append(value)
    if not by_agent:
        return EMPTY
    bars = [AgentBar(a, sum(v) / len(v), len(v)) for a, v in sorted(by_agent.items())]
    svg, text = agent_bars(bars)
    return fragment("agents_chart", svg=svg, text=text)


def header(manifest: ReportManifest, comparison: BaselineComparison | None) -> Markup:
    """Title, facts, headline cards and the baseline summary."""
    s = manifest.summary
    spend = spend_of(r for pair in manifest.results for r in pair.runs)
    avg = s.average_axis_score
    facts = [
        ("Report ID", manifest.report_id),
        ("Generated", manifest.timestamp),
        ("Duration", duration(manifest.duration_ms)),
        ("State", f"{manifest.state}: {manifest.error}" if manifest.error else manifest.state),
        ("Config", manifest.config_path),
        ("Profile", manifest.profile or "–"),
        ("Tool", f"{manifest.tool.name} {manifest.tool.version}"),
    ]
    cards = [
        ("AXIS Result (average)", "–" if avg is None else f"{avg:g}", band(avg)),
        ("Pairs", f"{s.completed} passed / {s.total}", ""),
        ("Failed", str(s.failed), "bad" if s.failed else ""),
        ("Runs", f"{s.runs_completed} completed / {s.runs_total}", ""),
        ("Agent cost", agent_text(spend), ""),
        ("Judge cost", judge_text(spend), ""),
    ]
    if s.cancelled:
        cards.insert(3, ("Cancelled", str(s.cancelled), "bad"))
    if s.skipped:
        cards.append(("Skipped", str(s.skipped), ""))
    baseline = EMPTY
    if comparison is not None:
        counts = {name: getattr(comparison.summary, name) for name in BASELINE_COUNTS}
        baseline = fragment("baseline_summary", name=comparison.baseline_name, **counts)
    return fragment(
        "header",
        title=manifest.name or manifest.report_id,
        facts=[fragment("fact", term=k, value=str(v)) for k, v in facts],
        cards=[fragment("card", cls=c, label=k, value=v) for k, v, c in cards],
        baseline=baseline,
    )


def _items(texts: Iterable[str]) -> list[Markup]:
    return [fragment("item", text=t) for t in texts]


def notes(manifest: ReportManifest, comparison: BaselineComparison | None) -> Markup:
    """Warnings, load failures, skipped pairs, suite hooks' notes, vanished baseline pairs."""
    out: list[Markup] = []
    if manifest.warnings:
        out.append(fragment("list", title="Warnings", items=_items(manifest.warnings)))
    intervals = manifest.summary.agent_intervals
    if intervals:
        title = "Mean AXIS per agent (95 % t interval, clustered by scenario)"
        out.append(fragment("list", title=title, items=_items(map(agent_interval_text, intervals))))
    panel = suite_panel_lines(manifest.summary)
    if panel:
        title = "Judge panel agreement (the whole run)"
        out.append(fragment("list", title=title, items=_items(t.strip() for t in panel)))
    loaded = [
        f"{p.scenario_key} · {p.agent_name}: {line}"
        for p in manifest.results
        for line in (p.load_warning or "").splitlines()
    ]
    if loaded:
        out.append(fragment("list", title="Machine overloaded during runs", items=_items(loaded)))
    if manifest.load_failures:
        failures = [
            fragment("load_failure", path=f.path, error=f.error) for f in manifest.load_failures
        ]
        out.append(fragment("list", title="Scenarios that failed to load", items=failures))
    if manifest.skipped:
        out.append(fragment("skipped", names=", ".join(manifest.skipped)))
    for label, text in (
        ("Before all: notes", manifest.before_all_output),
        ("After all: notes", manifest.after_all_output),
    ):
        if text:
            out.append(fragment("hook_notes", label=label, text=text))
    if comparison is not None and comparison.vanished:
        vanished = _items(f"{v.scenario_key} · {v.agent_name}" for v in comparison.vanished)
        out.append(fragment("list", title="In the baseline, not in this report", items=vanished))
    return fragment("notes", parts=out) if out else EMPTY


def filter_box(pairs: int) -> Markup:
    """The pair filter, for reports long enough to need one."""
    return fragment("filter") if pairs > 10 else EMPTY
