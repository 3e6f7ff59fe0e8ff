"""``axis run --summary-md PATH``: Markdown for a CI job summary page.

GitHub renders it on the run's page (append it to ``$GITHUB_STEP_SUMMARY``); GitLab and
others show it as an artifact. A headline (report, pass/fail counts, average composite),
one table row per pair (the representative's composite and four dimensions, runs and σ,
reliability, pass@k when a pair ran more than once, the baseline delta and verdict when
compared, a status emoji), then the failures and regressions with their reasons.
Names are escaped, so a ``|`` in ``claude-code|opus`` does not split a cell.
"""

from __future__ import annotations

import re

from axis_eval.report.verdicts import CiVerdicts, PairVerdict, strip_ansi
from axis_eval.runs.spend import cost_line

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~])")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""Control characters (an agent's stderr can hold terminal escapes): dropped."""
STATUS = {"passed": "✅ pass", "failed": "❌ fail", "skipped": "⏭️ skipped"}


def md(text: str) -> str:
    """Text with Markdown's punctuation escaped and line breaks flattened (safe in a cell)."""
    return _SPECIAL.sub(r"\\\1", " ".join(_CONTROL.sub("", strip_ansi(text)).split()))


def _cell(value: object) -> str:
    return "-" if value is None else md(str(value))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def runs_cell(v: PairVerdict) -> str:
    """``3 · σ 11.55`` (σ of the scored runs' composites), or the run count alone."""
    p = v.pair
    sigma = p.spread.axis_score.stdev if p.spread is not None else None
    return str(p.run_count) + ("" if sigma is None else f" · σ {sigma:g}")


def reliability_cell(v: PairVerdict) -> str:
    """``3/3``, with withheld runs noted."""
    rel = v.pair.reliability
    if rel is None:
        return "-"
    return f"{rel.succeeded}/{rel.total}" + (f" ({rel.withheld} withheld)" if rel.withheld else "")


def pass_at_k_cell(v: PairVerdict) -> str:
    """``1.00 (k=3)``: at least one of k runs passes (``--pass-score``)."""
    rates = v.pair.pass_rates
    if v.pair.run_count <= 1 or rates is None or not rates.n:
        return "-"
    return f"{rates.pass_at_k[-1]:.2f} (k={rates.n})"


def _delta_cells(v: PairVerdict) -> list[str]:
    entry = v.comparison
    if entry is None:
        return ["-", "new" if v.new else "-"]
    delta = "-" if entry.delta is None else f"{entry.delta:+g}"
    verdict: str = entry.verdict
    if entry.reliability.regressed:
        verdict += " · reliability regressed"
    return [delta, verdict]


def _headline(result: CiVerdicts) -> list[str]:
    m = result.manifest
    s = m.summary
    failed = result.count("failed") + len(m.load_failures)
    icon = "✅" if failed == 0 and m.state == "finished" else "❌"
    counts = [f"**{result.count('passed')} passed**", f"**{result.count('failed')} failed**"]
    if result.count("skipped"):
        counts.append(f"{result.count('skipped')} skipped")
    avg = "-" if s.average_axis_score is None else f"{s.average_axis_score:g}"
    lines = [
        f"## {icon} AXIS report {md(m.report_id)}" + (f" ({md(m.name)})" if m.name else ""),
        "",
        " · ".join(counts)
        + f" of {s.total} pairs · average composite **{avg}** · {s.runs_total} runs"
        + (f" · {m.state}" if m.state != "finished" else ""),
    ]
    gates = []
    if result.min_score is not None:
        gates.append(f"--min-score {result.min_score}")
    if result.comparison is not None:
        c = result.comparison.summary
        gates.append(
            f"baseline {md(result.comparison.baseline_name)} ({c.improved} improved, "
            f"{c.regressed} regressed, {c.unchanged} unchanged)"
        )
    if gates:
        lines += ["", "Gates: " + " · ".join(gates)]
    return lines


def render_summary_md(result: CiVerdicts) -> str:
    """The Markdown document."""
    m = result.manifest
    repeated = any(v.pair.run_count > 1 for v in result.pairs)
    compared = result.comparison is not None
    headers = ["Status", "Scenario", "Agent", "AXIS", "Goal", "Env", "Svc", "Agent dim"]
    headers += ["Runs · σ", "Reliability"]
    if repeated:
        headers.append("pass@k")
    if compared:
        headers += ["Δ baseline", "Verdict"]
    lines = [*_headline(result), ""]
    if result.pairs:
        lines += [_row(headers), _row(["---"] * len(headers))]
    for v in result.pairs:
        score = v.pair.score
        dims: list[int | None] = [None] * 4
        if score is not None and not score.withheld:
            dims = [score.goal_achievement, score.environment, score.service, score.agent]
        composite = "withheld" if score is not None and score.withheld else v.composite
        cells = [STATUS[v.outcome], md(v.pair.scenario_key), md(v.pair.agent_name)]
        cells += [_cell(composite), *(_cell(d) for d in dims)]
        cells += [runs_cell(v), reliability_cell(v)]
        if repeated:
            cells.append(pass_at_k_cell(v))
        if compared:
            cells += _delta_cells(v)
        lines.append(_row(cells))
    problems = [v for v in result.pairs if v.reasons]
    if problems:
        lines += ["", "### Failures and regressions", ""]
        for v in problems:
            reasons = "; ".join(r.message for r in v.reasons)
            lines.append(f"- ❌ **{md(v.label)}**: {md(reasons)}")
    if result.comparison is not None and result.comparison.vanished:
        names = ", ".join(f"{r.scenario_key} × {r.agent_name}" for r in result.comparison.vanished)
        lines += ["", f"Vanished from the baseline (not run): {md(names)}"]
    if m.load_failures:
        lines += ["", "### Scenario files that failed to load", ""]
        lines += [f"- ❌ {md(f.path)}: {md(f.error)}" for f in m.load_failures]
    cost = cost_line(r for v in result.pairs for r in v.pair.runs)
    if cost is not None:
        lines += ["", "Cost: " + md(cost)]
    lines += [
        "",
        f"Report {md(m.report_id)} in {md(str(result.report_dir))} · "
        f"axis reports {md(m.report_id)} · axis-eval {md(m.tool.version)}",
    ]
    return "\n".join(lines) + "\n"
