"""The report list (filterable by query parameters) and one report's pairs (paginated)."""

from __future__ import annotations

from collections.abc import Mapping

from axis_eval.report.html._markup import escape
from axis_eval.report.models import PairEntry, ReportManifest
from axis_eval.scoring.models import ScoreResult
from axis_eval.view.catalog import Catalog, Headline
from axis_eval.view.layout import Links, page

PAGE_SIZE = 100
"""Pairs per page of a report: a 1,000-pair report renders ten small pages."""

FILTERS = ("agent", "scenario", "profile", "status")


def _num(value: float | int | None) -> str:
    return "—" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))


def matches(head: Headline, q: Mapping[str, str]) -> bool:
    """Does ``head`` pass the filters ``agent``, ``scenario``, ``profile``, ``status``,
    ``from`` and ``to`` (dates ``YYYY-MM-DD``, inclusive)?"""
    if q.get("agent") and q["agent"] not in head.agents:
        return False
    if q.get("scenario") and q["scenario"] not in head.scenarios:
        return False
    if q.get("profile") and q["profile"] != (head.profile or ""):
        return False
    if q.get("status") and q["status"] not in head.statuses and q["status"] != head.state:
        return False
    if q.get("from") and head.date < q["from"]:
        return False
    return not (q.get("to") and head.date > q["to"])


MAX_CHIPS = 12
"""A filter with more values than this is a drop-down list in the form instead of links."""


def _filter_bar(heads: list[Headline], q: Mapping[str, str], links: Links) -> str:
    if not links.server:
        return ""
    values: dict[str, set[str]] = {name: set() for name in FILTERS}
    for h in heads:
        values["agent"].update(h.agents)
        values["scenario"].update(h.scenarios)
        if h.profile:
            values["profile"].add(h.profile)
        values["status"].update(h.statuses)
        values["status"].add(h.state)
    kept = {k: v for k, v in q.items() if k in (*FILTERS, "from", "to") and v}
    listed = {name for name in FILTERS if len(values[name]) > MAX_CHIPS}  # drop-downs
    parts, selects = [], []
    for name in FILTERS:
        if not values[name]:
            continue  # no report has one (e.g. no profile): no empty group
        if name in listed:  # hundreds of scenarios: a list, not a wall of links
            options = "".join(
                f'<option value="{escape(v)}"{" selected" if kept.get(name) == v else ""}>'
                f"{escape(v)}</option>"
                for v in sorted(values[name])
            )
            selects.append(
                f'<label>{name} <select name="{escape(name)}" data-filter="{escape(name)}">'
                f'<option value="">any</option>{options}</select></label> '
            )
            continue
        chips = []
        for value in sorted(values[name]):
            on = kept.get(name) == value
            href = links.index(**{**kept, name: None if on else value})
            chips.append(
                f'<a class="{"on" if on else ""}" data-filter="{escape(name)}" '
                f'href="{href}">{escape(value)}</a>'
            )
        parts.append(
            f'<div class="chips"><span class="muted">{name}:</span> {"".join(chips)}</div>'
        )
    hidden = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">'
        for k, v in kept.items()
        if k in FILTERS and k not in listed
    )
    dates = (
        f'<form method="get" action="/">{hidden}{"".join(selects)}<label>from '
        f'<input type="date" name="from" '
        f'value="{escape(kept.get("from", ""))}"></label> <label>to <input type="date" name="to" '
        f'value="{escape(kept.get("to", ""))}"></label> <button>Filter</button> '
        f'<a href="{links.index()}">clear</a></form>'
    )
    return f'<div class="filters">{"".join(parts)}{dates}</div>'


def list_page(catalog: Catalog, q: Mapping[str, str], links: Links) -> str:
    """Page (1): the reports, newest first, with their headline numbers."""
    heads = catalog.headlines()
    shown = [h for h in heads if matches(h, q)]
    rows = []
    for h in shown:
        agents = " ".join(f'<a href="{links.agent_history(a)}">{escape(a)}</a>' for a in h.agents)
        statuses = ", ".join(f"{escape(k)} {v}" for k, v in h.statuses.items())
        rows.append(
            f'<tr class="report" data-id="{escape(h.report_id)}">'
            f'<td class="nw"><a href="{links.report(h.report_id)}">{escape(h.report_id)}</a></td>'
            f'<td class="nw">{escape(h.started_at[:19].replace("T", " "))}</td>'
            f"<td>{escape(h.name or '')}</td><td>{escape(h.profile or '')}</td><td>{agents}</td>"
            f'<td class="num">{len(h.scenarios)}</td><td class="num">{h.pairs}</td>'
            f"<td>{escape(h.state)}: {statuses}</td>"
            f'<td class="num avg">{_num(h.average)}</td></tr>'
        )
    table = (
        "<table><thead><tr><th>Report</th><th>Started</th><th>Name</th><th>Profile</th>"
        '<th>Agents</th><th class="num">Scenarios</th><th class="num">Pairs</th><th>Status</th>'
        f'<th class="num">Avg AXIS</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    compare = ""
    if len(shown) >= 2:
        older, newer = shown[1].report_id, shown[0].report_id
        compare = (
            f'<p>Compare the newest two: <a class="compare-latest" '
            f'href="{links.compare(older, newer)}">{escape(older)} → {escape(newer)}</a></p>'
        )
    body = (
        f"<h1>Reports</h1>{_filter_bar(heads, q, links)}"
        f'<p class="muted">{len(shown)} of {len(heads)} reports</p>{compare}{table}'
    )
    return page("Reports", body, links)


def _dims(score: ScoreResult | None) -> list[float | int | None]:
    """The composite and the four dimensions (blank when unscored or withheld)."""
    if score is None or score.withheld:
        return [None] * 5
    return [score.axis_score, score.goal_achievement, score.environment, score.service, score.agent]


def _pair_row(rid: str, p: PairEntry, previous: Previous, links: Links) -> str:
    score = p.score
    dims = _dims(score)
    cells = "".join(f'<td class="num">{_num(v)}</td>' for v in dims)
    spread = p.spread
    rng = (
        ""
        if spread is None or spread.n < 2
        else f"{spread.axis_score.min:.0f}–{spread.axis_score.max:.0f}"
    )
    prev = ""
    if previous is not None and (p.scenario_key, p.agent_name) in previous[1]:
        href = links.compare_pair(previous[0], rid, p.scenario_key, p.agent_name)
        prev = f' <a class="vs" href="{href}">vs {escape(previous[0])}</a>'
    own = links.report(rid, scenario=p.scenario_key, agent=p.agent_name)
    history = links.pair_history(p.scenario_key, p.agent_name)
    return (
        f'<tr class="pair"><td><a href="{own}">{escape(p.scenario_key)}</a></td>'
        f'<td><a href="{links.agent_history(p.agent_name)}">{escape(p.agent_name)}</a></td>'
        f"<td>{escape(p.status)}</td>{cells}"
        f'<td class="num">{p.run_count}</td><td>{rng}</td>'
        f'<td><a href="{history}">history</a>{prev}</td></tr>'
    )


def _runs_table(p: PairEntry) -> str:
    """One pair's runs: what each did and scored (the representative marked)."""
    rows = []
    for run in p.runs:
        score = run.score
        dims = _dims(score)
        mark = " ★" if run.run_index == p.representative_run_index else ""
        why = run.error or (score.withheld_reason if score is not None and score.withheld else "")
        rows.append(
            f'<tr class="run"><td>#{run.run_index}{mark}</td><td>{escape(run.status)}</td>'
            + "".join(f'<td class="num">{_num(v)}</td>' for v in dims)
            + f'<td class="num">{run.duration_ms / 1000:.1f} s</td>'
            f'<td class="num">{run.tokens}</td>'
            f"<td>{escape(run.sandbox or '')}</td><td>{escape(why or '')}</td></tr>"
        )
    return (
        f"<h2>Runs of {escape(p.scenario_key)} · {escape(p.agent_name)}</h2>"
        '<p class="muted">★ the representative run (its scores are the pair\'s).</p>'
        "<table><thead><tr><th>Run</th><th>Status</th>"
        '<th class="num">AXIS</th><th class="num">Goal</th><th class="num">Env</th>'
        '<th class="num">Service</th><th class="num">Agent</th><th class="num">Time</th>'
        f'<th class="num">Tokens</th><th>Sandbox</th><th>Error</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


Previous = tuple[str, set[tuple[str, str]]] | None
"""The report before this one and the pairs it holds (its side-by-side links)."""


def report_page(
    rid: str,
    manifest: ReportManifest,
    q: Mapping[str, str],
    links: Links,
    previous: Previous,
    *,
    own_page: bool = False,
) -> str:
    """Page (2): one report's pairs, ``PAGE_SIZE`` at a time (or the pairs asked for, with
    their runs when one pair is asked for)."""
    pairs = manifest.results
    scenario, agent = q.get("scenario"), q.get("agent")
    if scenario is not None or agent is not None:
        pairs = [
            p
            for p in pairs
            if (scenario in (None, p.scenario_key)) and (agent in (None, p.agent_name))
        ]
    try:
        number = max(1, int(q.get("page", "1")))
    except ValueError:
        number = 1
    pages = max(1, -(-len(pairs) // PAGE_SIZE))
    number = min(number, pages)
    shown = pairs[(number - 1) * PAGE_SIZE : number * PAGE_SIZE]
    rows = "".join(_pair_row(rid, p, previous, links) for p in shown)
    nav = ""
    if pages > 1:
        numbers = " ".join(
            f"<b>{n}</b>" if n == number else f'<a href="{links.report(rid, n)}">{n}</a>'
            for n in range(1, pages + 1)
        )
        nav = f'<p class="pages">Page {numbers}</p>'
    s = manifest.summary
    whole = (
        ""
        if len(pairs) == len(manifest.results)
        else f' <a href="{links.report(rid)}">all pairs</a>'
    )
    runs = ""
    if scenario is not None and agent is not None and shown:
        runs = _runs_table(shown[0])
        if own_page:
            at = next(i for i, p in enumerate(manifest.results) if p is shown[0])
            runs += (
                f'<p><a class="own-page" href="{links.report_html(rid, at)}">This pair in the '
                "report's own page</a> (its transcripts, checks and judge rationale).</p>"
            )
    elif own_page:
        whole += f' · <a class="own-page" href="{links.report_html(rid)}">report page</a>'
    body = (
        f"<h1>Report {escape(rid)}</h1><p>{escape(manifest.name or '')} "
        f'<span class="muted">{escape(manifest.started_at)} · {escape(manifest.state)} · profile '
        f"{escape(manifest.profile or '—')} · {len(manifest.results)} pairs, {s.runs_total} runs · "
        f"average AXIS {_num(s.average_axis_score)}</span>{whole}</p>{nav}"
        "<table><thead><tr><th>Scenario</th><th>Agent</th><th>Status</th>"
        '<th class="num">AXIS</th><th class="num">Goal</th><th class="num">Env</th>'
        '<th class="num">Service</th><th class="num">Agent</th><th class="num">Runs</th>'
        f"<th>Spread</th><th></th></tr></thead><tbody>{rows}</tbody></table>{nav}{runs}"
    )
    return page(f"Report {rid}", body, links)
