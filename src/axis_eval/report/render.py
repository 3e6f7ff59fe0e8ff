"""Terminal renderings: dry runs, the report list, one report's detail, the post-run summary."""

from __future__ import annotations

from typing import Any

from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.planning.models import Plan
from axis_eval.report.models import PairDiff, PairEntry, ReportDiff, ReportManifest
from axis_eval.report.render_stats import (
    delta_cell,
    interval_lines,
    load_lines,
    paired_line,
    suite_lines,
)
from axis_eval.report.verdicts import CiVerdicts, PairVerdict
from axis_eval.runs.aggregate import (
    describe_reliability,
    diff_reports as diff_reports,  # for the CLI
    pair_duration_ms,
)
from axis_eval.runs.spend import cost_line, spend_of
from axis_eval.transcript.sparse_index import format_ms


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers).rstrip(), fmt.format(*("─" * w for w in widths))]
    lines.extend(fmt.format(*row).rstrip() for row in rows)
    return lines


def _sandbox(policy: SandboxPolicy) -> str:
    """``bwrap``, ``auto (net none)``: what the job asks for (``auto`` is decided at start)."""
    return policy.mode + (" (net none)" if policy.network == "none" else "")


def render_dry_run(plan: Plan) -> str:
    """The jobs in scheduling order, as text."""
    lines = [plan.status_line, ""]
    rows = [
        [
            str(job.number),
            f"{job.run_index}/{job.run_count}",
            job.scenario.key,
            job.agent.name,
            _minutes(job.time_limit_s),
            f"{job.token_limit:,}" if job.token_limit else "-",
            _sandbox(job.sandbox),
        ]
        for job in plan.jobs
    ]
    lines.extend(_table(["#", "run", "scenario", "agent", "time", "tokens", "sandbox"], rows))
    if plan.skipped:
        lines += ["", f"Skipped ({len(plan.skipped)}): {', '.join(plan.skipped)}"]
    if plan.load_failures:
        lines += ["", f"Failed to load ({len(plan.load_failures)}):"]
        lines += [f"  {f.path}: {f.error}" for f in plan.load_failures]
    return "\n".join(lines)


def dry_run_json(plan: Plan) -> dict[str, Any]:
    """The dry run as JSON-ready data (camelCase, like the report)."""
    return {
        "statusLine": plan.status_line,
        "configPath": plan.config_path,
        "profile": plan.profile,
        "pairs": len(plan.pairs),
        "jobs": [
            {
                "number": job.number,
                "scenarioKey": job.scenario.key,
                "agentName": job.agent.name,
                "agent": job.agent.adapter,
                "runIndex": job.run_index,
                "runCount": job.run_count,
                "timeLimitS": job.time_limit_s,
                "tokenLimit": job.token_limit,
                "sandbox": job.sandbox.mode,
                "network": job.sandbox.network,
            }
            for job in plan.jobs
        ],
        "skipped": plan.skipped,
        "loadFailures": [f.model_dump() for f in plan.load_failures],
        "warnings": plan.warnings,
        "notes": plan.notes,
    }


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:g}m"


def _cost(value: float | None, simulated: bool = False) -> str:
    """A cost cell; simulated usage (the scripted model server) is never a dollar figure."""
    if simulated:
        return "simulated" if value is None else f"${value:.4f} + simulated"
    return "-" if value is None else f"${value:.4f}"


def spend_line(m: ReportManifest) -> str | None:
    """``  Cost:       agents $0.0300 · judges ≈$0.0100`` (:func:`cost_line`)."""
    line = cost_line(r for e in m.results for r in e.runs)
    return None if line is None else f"  Cost:       {line}"


def render_report_list(manifests: list[ReportManifest], limit: int) -> str:
    """``axis reports``: newest first."""
    if not manifests:
        return "No reports found. Run `axis run` to generate one."
    rows = []
    for m in manifests[:limit]:
        s = m.summary
        avg = "-" if s.average_axis_score is None else f"{s.average_axis_score:g}"
        spend = spend_of(r for e in m.results for r in e.runs)
        rows.append(
            [
                m.report_id,
                m.state,
                str(s.total),
                avg,
                str(s.completed),
                str(s.failed),
                format_ms(m.duration_ms),
                _cost(spend.total_cost_usd, spend.cost_simulated),
            ]
        )
    lines = ["AXIS Reports", ""]
    lines += _table(
        ["Report ID", "state", "pairs", "AXIS", "pass", "fail", "duration", "cost"], rows
    )
    if len(manifests) > limit:
        lines.append(f"  ... and {len(manifests) - limit} more")
    return "\n".join(lines)


def _status(entry: PairEntry) -> str:
    marks = {"completed": "✓ pass", "failed": "✗ fail", "cancelled": "○ cancelled"}
    return marks[entry.status]


def _score_cells(entry: PairEntry) -> list[str]:
    score = entry.score
    if score is None:
        return ["-"] * 5
    if score.withheld:
        return ["withheld", "-", "-", "-", "-"]
    values = (
        score.axis_score,
        score.goal_achievement,
        score.environment,
        score.service,
        score.agent,
    )
    return ["-" if v is None else str(v) for v in values]


def render_report_detail(m: ReportManifest) -> str:
    """``axis reports ID``: the header and one row per pair."""
    s = m.summary
    counts = [f"{s.completed} completed"]
    if s.failed:
        counts.append(f"{s.failed} failed")
    if s.cancelled:
        counts.append(f"{s.cancelled} cancelled")
    if s.skipped:
        counts.append(f"{s.skipped} skipped")
    lines = [
        f"AXIS Report: {m.report_id}" + (f" ({m.name})" if m.name else ""),
        f"  Timestamp:  {m.timestamp}",
        f"  Duration:   {format_ms(m.duration_ms)}",
        f"  State:      {m.state}" + (f" ({m.error})" if m.error else ""),
        f"  Pairs:      {', '.join(counts)} ({s.total} total)",
        f"  Runs:       {s.runs_total} total, {s.runs_failed} failed"
        + (f", {s.runs_cancelled} cancelled" if s.runs_cancelled else ""),
    ]
    if s.average_axis_score is not None:
        lines.append(f"  AXIS Result: {s.average_axis_score:g} / 100 (average)")
    lines += suite_lines(s)
    cost = spend_line(m)
    if cost is not None:
        lines.append(cost)
    lines.append("")
    scored = any(e.score is not None for e in m.results)
    rows = []
    for e in m.results:
        agent = e.agent_name + (f" @{e.variant}" if e.variant else "")
        tokens = f"{e.token_usage.total:,}" if e.token_usage else "-"
        runs = f"{sum(r.status == 'completed' for r in e.runs)}/{e.run_count}"
        row = [e.base_key, agent, _status(e), runs]
        if scored:
            row += _score_cells(e)
        row += [format_ms(e.duration_ms), tokens, _cost(e.total_cost_usd, e.cost_simulated)]
        rows.append(row)
    headers = ["Scenario", "Agent", "Status", "runs"]
    if scored:
        headers += ["AXIS", "Goal", "Env", "Svc", "Agent"]
    table = _table([*headers, "Duration", "tokens", "Cost"], rows)
    lines += table[:2]
    for entry, row_line in zip(m.results, table[2:], strict=True):
        lines.append(row_line)
        lines.extend(repeat_lines(entry) + interval_lines(entry) + load_lines(entry))
        if entry.error:
            lines.append(f"    ↳ {entry.error.splitlines()[0][:120]}")
        elif entry.score is not None and entry.score.withheld:
            lines.append(f"    ↳ score withheld: {(entry.score.withheld_reason or '')[:120]}")
        elif entry.score is not None and entry.score.insights:
            lines.append(f"    ↳ {'  |  '.join(entry.score.insights)}")
    if m.load_failures:
        lines += ["", f"Failed to load ({len(m.load_failures)}):"]
        lines += [f"  {f.path}: {f.error}" for f in m.load_failures]
    return "\n".join(lines)


def _num(value: float) -> str:
    """87 → ``87``, 85.5 → ``85.5`` (at most one decimal, as the seed prints)."""
    return f"{round(value, 1):g}"


def _run_cell(entry: PairEntry, index: int) -> str:
    run = next((r for r in entry.runs if r.run_index == index), None)
    if run is None or run.status == "cancelled":
        return f"#{index} -"
    if run.status == "failed":
        return f"#{index} ✗"
    if run.score is None:
        mark = "✓"
    elif run.score.withheld:
        mark = "withheld"
    else:
        mark = "-" if run.score.axis_score is None else str(run.score.axis_score)
    star = "*" if index == entry.representative_run_index else ""
    return f"#{index} {mark}{star}"


def repeat_lines(entry: PairEntry) -> list[str]:
    """Under a repeated pair: the spread, every run's composite, reliability and pass rates.

    ``↳ 3 runs · representative #2 · median 87 · range 81-92 · σ 5.5`` then
    ``runs: #1 81, #2 87*, #3 92   (* representative)``. The row above shows the
    representative's own composite; with an even number of scored runs the median shown
    here is a midpoint between two runs.
    """
    if entry.run_count <= 1:
        return []
    head = [f"{entry.run_count} runs"]
    if entry.representative_run_index is not None:
        head.append(f"representative #{entry.representative_run_index}")
    sp = entry.spread
    if sp is not None:
        stats = sp.axis_score
        head.append(f"median {_num(stats.median)}")
        head.append(f"range {_num(stats.min)}-{_num(stats.max)}")
        head.append("σ -" if stats.stdev is None else f"σ {stats.stdev:.1f}")
    lines = ["  ↳ " + " · ".join(head)]
    cells = ", ".join(_run_cell(entry, i) for i in range(1, entry.run_count + 1))
    star = "   (* representative)" if entry.representative_run_index is not None else ""
    lines.append(f"    runs: {cells}{star}")
    rel = entry.reliability
    rates = entry.pass_rates
    if rel is not None and (rel.succeeded < rel.total or rel.withheld or rates is not None):
        tail = [describe_reliability(rel, scored=rates is not None)]
        if rates is not None and rates.n:
            k = rates.n
            tail.append(
                f"pass@{k} {rates.pass_at_k[-1]:.2f} · pass^{k} {rates.pass_hat_k[-1]:.2f} "
                f"· {rates.passed}/{rates.n} ≥ {rates.pass_score}"
            )
        lines.append("    " + " · ".join(tail))
    return lines


def _delta(value: int | None, changed: bool) -> str:
    if value is None:
        return "-"
    return f"{value:+d}" + ("*" if changed else "")


def _diff_row(p: PairDiff) -> list[str]:
    if p.verdict in ("new", "vanished"):
        return [p.scenario_key, p.agent_name, *["-"] * 8, p.verdict, "-"]
    head = p.deltas[0]
    cells = [_delta(d.delta, d.changed) for d in p.deltas]
    noise = f"±{head.noise:g}" + ("" if p.noise_measured else " (unmeasured)")
    a = "-" if head.a is None else str(head.a)
    b = "-" if head.b is None else str(head.b)
    verdict = "noise unmeasured" if p.verdict == "unmeasured" else p.verdict
    return [p.scenario_key, p.agent_name, a, b, *cells, noise, verdict, delta_cell(head.interval)]


def render_report_diff(diff: ReportDiff) -> str:
    """``axis reports diff A B``: per-pair deltas; ``*`` marks a change beyond the noise."""
    lines = [f"AXIS Report diff: {diff.report_a} → {diff.report_b}", ""]
    rows = [_diff_row(p) for p in diff.pairs]
    headers = ["Scenario", "Agent", "A", "B", "ΔAXIS", "ΔGoal", "ΔEnv", "ΔSvc", "ΔAgent"]
    lines += _table([*headers, "noise", "verdict", "Δmean AXIS [95% CI]"], rows)
    lines += [
        "",
        "* beyond the noise band max(1, 2σ of report A's runs; the column shows the "
        "composite's, each dimension uses its own σ).",
        "  A pair with one scored run in A has no measured σ: a change beyond the floor of 1",
        "  reads 'noise unmeasured', not improved or regressed.",
        "  Δmean: B − A of the mean composites, Welch t interval (2+ scored runs a side).",
    ]
    paired = paired_line(diff.paired)
    if paired:
        lines.append(paired)
    for verdict in ("new", "vanished"):
        names = [f"{p.scenario_key} × {p.agent_name}" for p in diff.pairs if p.verdict == verdict]
        if names:
            lines.append(f"{verdict.capitalize()} pairs ({len(names)}): {', '.join(names)}")
    return "\n".join(lines)


# --- after `axis run` ---------------------------------------------------------------------

_OUTCOME = {"passed": "✓ pass", "failed": "✗ fail", "skipped": "○ cancelled"}


def _run_cells(entry: PairEntry, scored: bool) -> list[str]:
    sp = entry.spread
    sigma = sp.axis_score.stdev if sp is not None else None
    runs = str(entry.run_count) + ("" if sigma is None else f" · σ {sigma:.1f}")
    rel = entry.reliability
    reliability = "-" if rel is None else describe_reliability(rel, scored=scored)
    return [runs, reliability]


def _baseline_cells(v: PairVerdict) -> list[str]:
    entry = v.comparison
    if entry is None:
        return ["-", "new" if v.new else "-"]
    delta = "-" if entry.delta is None else f"{entry.delta:+g}"
    verdict = entry.verdict + (" +reliability" if entry.reliability.regressed else "")
    if entry.regressed:
        verdict = "▼ " + verdict
    return [delta, verdict]


def render_run_summary(result: CiVerdicts) -> str:
    """After ``axis run``: the headline and one table row per pair with its CI verdict.

    Columns: status (with ``--min-score`` and the baseline applied), the representative's
    composite and four dimensions, runs and σ, reliability and, when compared, the
    baseline delta and verdict. Under a row that did not pass, its reasons (regressions
    are spelled out after the table, with the baseline's numbers).
    """
    m = result.manifest
    s = m.summary
    counts = [f"{result.count('passed')} passed", f"{result.count('failed')} failed"]
    if result.count("skipped"):
        counts.append(f"{result.count('skipped')} cancelled")
    runs = f"{s.runs_total} runs" + (f", {s.runs_failed} failed" if s.runs_failed else "")
    if s.runs_cancelled:
        runs += f", {s.runs_cancelled} cancelled"
    lines = [
        f"AXIS Report: {m.report_id}" + (f" ({m.name})" if m.name else ""),
        f"  Pairs:      {', '.join(counts)} ({s.total} total) · {runs} · "
        f"{format_ms(m.duration_ms)}",
    ]
    if m.state != "finished":
        lines.append(f"  State:      {m.state}" + (f" ({m.error})" if m.error else ""))
    if s.average_axis_score is not None:
        lines.append(f"  AXIS Result: {s.average_axis_score:g} / 100 (average)")
    lines += suite_lines(s)
    cost = spend_line(m)
    if cost is not None:
        lines.append(cost)
    lines.append("")
    compared = result.comparison is not None
    headers = ["Scenario", "Agent", "Status", "AXIS", "Goal", "Env", "Svc", "Agent"]
    headers += ["Runs", "Reliability"]
    if compared:
        headers += ["ΔBaseline", "Verdict"]
    headers.append("Duration")
    rows = []
    for v in result.pairs:
        e = v.pair
        agent = e.agent_name + (f" @{e.variant}" if e.variant else "")
        row = [
            e.base_key,
            agent,
            _OUTCOME[v.outcome],
            *_score_cells(e),
            *_run_cells(e, result.scored),
        ]
        if compared:
            row += _baseline_cells(v)
        row.append(format_ms(pair_duration_ms(e)))
        rows.append(row)
    table = _table(headers, rows)
    lines += table[:2]
    for v, row_line in zip(result.pairs, table[2:], strict=True):
        lines.append(row_line)
        for reason in v.reasons:
            if reason.kind != "regressed":
                lines.append(f"    ↳ {reason.message}")
        score = v.pair.score
        if score is not None and score.withheld and not v.pair.failed:
            lines.append(f"    ↳ score withheld: {(score.withheld_reason or '')[:120]}")
        lines += interval_lines(v.pair) + load_lines(v.pair)
    if m.load_failures:
        lines += ["", f"Failed to load ({len(m.load_failures)}):"]
        lines += [f"  {f.path}: {f.error}" for f in m.load_failures]
    return "\n".join(lines)
