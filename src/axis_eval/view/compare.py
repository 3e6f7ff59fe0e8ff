"""Page (4): two reports compared, per-pair deltas as ``axis reports diff`` computes them."""

from __future__ import annotations

from axis_eval.report.html._markup import escape
from axis_eval.report.models import PairDiff, ReportDiff
from axis_eval.view.layout import Links, page

ORDER = {
    "regressed": 0,
    "mixed": 1,
    "unmeasured": 2,
    "improved": 3,
    "unchanged": 4,
    "new": 5,
    "vanished": 6,
    "unscored": 7,
}
"""Regressions first."""

SORTS = ("verdict", "delta", "scenario", "agent")


def _delta(d: PairDiff) -> float:
    return float(d.deltas[0].delta) if d.deltas and d.deltas[0].delta is not None else 0.0


def sorted_pairs(pairs: list[PairDiff], sort: str) -> list[PairDiff]:
    if sort == "delta":
        return sorted(pairs, key=lambda d: (_delta(d), d.scenario_key, d.agent_name))
    if sort == "scenario":
        return sorted(pairs, key=lambda d: (d.scenario_key, d.agent_name))
    if sort == "agent":
        return sorted(pairs, key=lambda d: (d.agent_name, d.scenario_key))
    return sorted(
        pairs, key=lambda d: (ORDER.get(d.verdict, 9), _delta(d), d.scenario_key, d.agent_name)
    )


def compare_page(a_id: str, b_id: str, diff: ReportDiff, sort: str, links: Links) -> str:
    sort = sort if sort in SORTS else "verdict"
    rows = []
    for d in sorted_pairs(diff.pairs, sort):
        cells = []
        for delta in d.deltas:
            shown = "—" if delta.delta is None else f"{delta.delta:+d}"
            cls = (
                ""
                if not delta.changed or delta.delta is None
                else ("good" if delta.delta > 0 else "bad")
            )
            raw = "" if delta.delta is None else delta.delta
            before = "—" if delta.a is None else delta.a
            after = "—" if delta.b is None else delta.b
            cells.append(
                f'<td class="num {cls}" data-score="{escape(delta.name)}" data-delta="{raw}">'
                f'{shown} <span class="muted">({before}→{after}, ±{delta.noise:.1f})</span></td>'
            )
        if not cells:
            cells = ['<td colspan="5" class="muted">—</td>']
        both = d.verdict not in ("new", "vanished")
        pair_href = links.compare_pair(a_id, b_id, d.scenario_key, d.agent_name)
        side = f'<a class="transcripts" href="{pair_href}">transcripts</a>' if both else ""
        scenario, agent, verdict = escape(d.scenario_key), escape(d.agent_name), escape(d.verdict)
        rows.append(
            f'<tr class="diff {verdict}" data-scenario="{scenario}" data-agent="{agent}" '
            f'data-verdict="{verdict}"><td>{scenario}</td><td>{agent}</td>'
            f'<td class="{verdict}">{verdict}</td>{"".join(cells)}'
            f'<td class="num">{d.runs_a}/{d.runs_b}</td><td>{side} '
            f'<a href="{links.pair_history(d.scenario_key, d.agent_name)}">history</a></td></tr>'
        )
    heads = {"scenario": "Scenario", "agent": "Agent", "verdict": "Verdict", "delta": "Δ AXIS"}

    def th(name: str, cls: str = "") -> str:
        label = heads[name]
        if name == sort:
            return f'<th class="{cls}">{label} ▾</th>'
        href = links.compare(a_id, b_id, name)
        return (
            f'<th class="{cls}"><a class="sort" data-sort="{name}" href="{href}">{label}</a></th>'
        )

    paired = ""
    if diff.paired is not None:
        t = diff.paired
        mean = "—" if t.mean_delta is None else f"{t.mean_delta:+.2f}"
        p_value = "—" if t.p_value is None else f"{t.p_value:.3g}"
        paired = (
            f'<p class="muted">Paired t test over {t.n} pairs: mean Δ {mean}, p = {p_value}</p>'
        )
    body = (
        f'<h1>Compare <a href="{links.report(a_id)}">{escape(a_id)}</a> → '
        f'<a href="{links.report(b_id)}">{escape(b_id)}</a></h1>'
        '<p class="muted">Per-pair deltas of the headline scores, B − A; a change counts beyond '
        "report A's noise, max(1, 2σ) of its runs (as <code>axis reports diff</code>).</p>"
        f"<table><thead><tr>{th('scenario')}{th('agent')}{th('verdict')}{th('delta', 'num')}"
        '<th class="num">Δ Goal</th><th class="num">Δ Env</th><th class="num">Δ Service</th>'
        f'<th class="num">Δ Agent</th><th class="num">Runs A/B</th><th></th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{paired}"
    )
    return page(f"Compare {a_id} → {b_id}", body, links)
