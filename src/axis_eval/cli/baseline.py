"""``axis baseline``: set, list, show, delete and compare baselines (``.axis/baselines/``).

Also what ``axis run --compare-baseline`` uses: :func:`load_for_run` (before the run),
:func:`compare_after_run` (saves ``baseline-comparison.json``) and :func:`comparison_lines`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from axis_eval.cli._common import axis_home, echo_result, fail

if TYPE_CHECKING:
    from axis_eval.report.models import ReportManifest
    from axis_eval.runs.baseline_models import Baseline, BaselineComparison, ComparisonEntry


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if value != int(value) else str(int(value))


def _signed(value: float) -> str:
    text = _num(abs(value))
    return f"+{text}" if value > 0 else (f"-{text}" if value < 0 else "0")


def render_list(baselines: list[Baseline]) -> str:
    """AXIS's ``AXIS Baselines`` table."""
    if not baselines:
        return "No baselines found. Use `axis baseline set` to create one."
    lines = ["AXIS Baselines", f"{'Name':<20}{'Updated':<22}{'Scenarios':<12}Agents"]
    for b in baselines:
        updated = b.updated_at.replace("T", " ")[:19]
        lines.append(f"{b.name:<20}{updated:<22}{len(b.results):<12}{len(b.agent_names())}")
    return "\n".join(lines)


def render_show(baseline: Baseline) -> str:
    """Header and one row per pair, with runs, σ and reliability."""
    lines = [
        f"Baseline: {baseline.name}",
        f"Created:  {baseline.created_at}",
        f"Updated:  {baseline.updated_at}",
        "",
        f"{'Scenario':<28}{'Agent':<22}{'AXIS':>5}{'Goal':>6}{'Env.':>6}{'Svc.':>6}"
        f"{'Agent':>7}{'Duration':>10}  {'Runs':<5}{'σ':<7}{'Rel.':<7}Report",
    ]
    for scenario_key, agents in sorted(baseline.results.items()):
        for agent_name, e in sorted(agents.items()):
            rel = e.reliability_or_default
            sigma = _num(e.stdev) if e.noise_measured else "n/a"
            lines.append(
                f"{scenario_key:<28}{agent_name:<22}{_num(e.axis_score):>5}"
                f"{_num(e.goal_achievement):>6}{_num(e.environment):>6}{_num(e.service):>6}"
                f"{_num(e.agent):>7}{e.duration_ms / 1000:>9.1f}s  {e.run_count:<5}"
                f"{sigma:<7}{f'{rel.succeeded}/{rel.total}':<7}{e.from_report_id}"
            )
    return "\n".join(lines)


def _rel_text(entry: ComparisonEntry) -> str:
    b, c = entry.reliability.baseline, entry.reliability.current
    return f"{b.succeeded}/{b.total} → {c.succeeded}/{c.total}"


def _band_text(entry: ComparisonEntry) -> str:
    if not entry.noise_measured:
        return f"±{_num(entry.band)} (floor; noise unmeasured: single-run baseline)"
    return f"±{_num(entry.band)} (2σ, σ {_num(entry.stdev)} over {entry.baseline_runs} runs)"


def render_comparison(cmp: BaselineComparison) -> str:
    """The comparison table, per-dimension deltas, new and vanished pairs, regressions."""
    lines = [
        f"Baseline: {cmp.baseline_name}   Report: {cmp.report_id}",
        f"{'Scenario':<28}{'Agent':<22}{'Baseline':>9}{'Current':>9}{'Delta':>9}"
        f"{'Band':>7}  {'Reliability':<14}{'MWU p':<16}Verdict",
    ]
    for e in cmp.entries:
        if e.delta is None:
            delta = "-"
        else:
            mark = " ▼" if e.verdict == "regressed" else " ▲" if e.verdict == "improved" else ""
            delta = _signed(e.delta) + mark
        band = f"±{_num(e.band)}" + ("" if e.noise_measured else "*")
        p = "insufficient n" if e.p_value is None else f"{e.p_value:.3f}"
        verdict = e.verdict + (" +reliability" if e.reliability.regressed else "")
        lines.append(
            f"{e.scenario_key:<28}{e.agent_name:<22}{_num(e.baseline):>9}{_num(e.current):>9}"
            f"{delta:>9}{band:>7}  {_rel_text(e):<14}{p:<16}{verdict}"
        )
        dims = [
            f"{name} {_num(d.baseline)}→{_num(d.current)}"
            + ("" if d.delta is None else f" ({_signed(d.delta)})")
            for name, d in (
                ("goal", e.categories["goalAchievement"]),
                ("env", e.categories["environment"]),
                ("svc", e.categories["service"]),
                ("agent", e.categories["agent"]),
            )
        ]
        lines.append("    " + " · ".join(dims))
    if any(not e.noise_measured for e in cmp.entries):
        lines.append("  * single-run baseline: noise unmeasured, band is the floor of 1")
    lines.append("")
    return "\n".join([*lines, *comparison_outcome(cmp)])


def comparison_outcome(cmp: BaselineComparison) -> list[str]:
    """The counts, new and vanished pairs, and one ``REGRESSION`` line per regression."""
    s = cmp.summary
    lines: list[str] = []
    lines.append(
        f"{s.improved} improved, {s.regressed} regressed, {s.unchanged} unchanged"
        + (f", {s.unscored} unscored" if s.unscored else "")
    )
    lines.append(f"New (not in baseline): {s.new_scenarios}")
    for ref in cmp.new:
        lines.append(f"  + {ref.scenario_key} × {ref.agent_name} ({_num(ref.score)})")
    if cmp.vanished:
        lines.append(f"Vanished (in baseline, not in report): {len(cmp.vanished)}")
        for ref in cmp.vanished:
            lines.append(f"  - {ref.scenario_key} × {ref.agent_name} (was {_num(ref.score)})")
    for e in cmp.entries:
        if e.score_regressed and e.delta is not None:
            lines.append(
                f"REGRESSION {e.scenario_key} × {e.agent_name}: {_num(e.baseline)} → "
                f"{_num(e.current)} ({_signed(e.delta)}), beyond the noise band {_band_text(e)}"
            )
        if e.reliability.regressed:
            lines.append(
                f"REGRESSION {e.scenario_key} × {e.agent_name}: reliability {_rel_text(e)} "
                f"(the baseline's rate predicts {_num(e.reliability.expected)} scored of "
                f"{e.reliability.current.total})"
            )
    return lines


def load_for_run(config_dir: str, name: str) -> Baseline:
    """``axis run --compare-baseline NAME``: the baseline, loaded before the run starts.

    Raises:
        AxisError: invalid name, missing or unreadable baseline (before any job runs).
    """
    from axis_eval.runs.baselines import load_baseline

    return load_baseline(config_dir, name)


def compare_after_run(
    baseline: Baseline, manifest: ReportManifest, report_dir: Path
) -> BaselineComparison:
    """Compare the run's report with ``baseline`` and save the comparison beside it.

    ``<report folder>/baseline-comparison.json`` holds the comparison (the ``--json`` shape
    of ``axis baseline compare``), written atomically, so the HTML report and later tools
    read the deltas without comparing again. The caller prints it (``comparison_lines``).

    Raises:
        AxisError: the comparison file cannot be written.
    """
    from axis_eval.report.ci import save_comparison
    from axis_eval.runs.baselines import compare

    result = compare(baseline, manifest)
    save_comparison(report_dir, result)
    # The page written at the end of the run predates the comparison: write it again so it
    # shows the deltas. Failing that costs nothing but the deltas on the page.
    from axis_eval.report.html import write_html

    try:
        write_html(report_dir, manifest=manifest)
    except Exception as exc:
        click.echo(f"warning: report.html not rewritten with the comparison: {exc}", err=True)
    return result


def comparison_lines(cmp: BaselineComparison) -> list[str]:
    """What ``axis run`` prints after its summary table: the baseline, counts, regressions."""
    return [f"Baseline: {cmp.baseline_name}   Report: {cmp.report_id}", *comparison_outcome(cmp)]


@click.group("baseline")
def baseline_group() -> None:
    """Snapshots of a report's scores, and comparisons against them (exit 1 on regression)."""


_config_option = click.option(
    "-c", "--config", "config_path", help="Config file or folder (locates .axis/)."
)


@baseline_group.command("set")
@click.argument("name", default="default")
@click.option(
    "--from", "--report", "report_id", default="latest", help="Report id (default: latest)."
)
@_config_option
def set_command(name: str, report_id: str, config_path: str | None) -> None:
    """Create or merge baseline NAME from a report (pairs with a score overwrite)."""
    from axis_eval.errors import AxisError
    from axis_eval.runs.baselines import set_baseline, validate_name
    from axis_eval.runs.store import read_report

    try:
        validate_name(name)
        home = axis_home(config_path)
        report = read_report(home, report_id)
        baseline, _ = set_baseline(home, report, name)
    except AxisError as error:
        fail(error)
    click.echo(
        f'Baseline "{name}" updated — {len(baseline.results)} scenario(s), '
        f"{len(baseline.agent_names())} agent(s)"
    )
    click.echo(f"Source: report {report.report_id}")


@baseline_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_option
def list_command(as_json: bool, config_path: str | None) -> None:
    """List baselines, most recently updated first."""
    from axis_eval.errors import AxisError
    from axis_eval.runs.baselines import list_baselines

    try:
        found = list_baselines(axis_home(config_path))
    except AxisError as error:
        fail(error)
    echo_result(found, as_json, render_list)


@baseline_group.command("show")
@click.argument("name", default="default")
@click.option("--json", "as_json", is_flag=True, help="Print the baseline file.")
@_config_option
def show_command(name: str, as_json: bool, config_path: str | None) -> None:
    """Show one baseline."""
    from axis_eval.errors import AxisError
    from axis_eval.runs.baselines import load_baseline

    try:
        baseline = load_baseline(axis_home(config_path), name)
    except AxisError as error:
        fail(error)
    echo_result(baseline, as_json, render_show)


@baseline_group.command("delete")
@click.argument("name", default="default")
@_config_option
def delete_command(name: str, config_path: str | None) -> None:
    """Delete one baseline."""
    from axis_eval.errors import AxisError
    from axis_eval.runs.baselines import BaselineError, delete_baseline

    try:
        if not delete_baseline(axis_home(config_path), name):
            raise BaselineError(f'Baseline "{name}" not found.')
    except AxisError as error:
        fail(error)
    click.echo(f'Baseline "{name}" deleted.')


@baseline_group.command("compare")
@click.argument("name", default="default")
@click.option("--report", "report_id", default="latest", help="Report id (default: latest).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_option
def compare_command(name: str, report_id: str, as_json: bool, config_path: str | None) -> None:
    """Compare a report against baseline NAME; exit 1 on any regression."""
    from axis_eval.errors import AxisError
    from axis_eval.runs.baselines import compare, load_baseline
    from axis_eval.runs.store import read_report

    try:
        home = axis_home(config_path)
        baseline = load_baseline(home, name)
        result = compare(baseline, read_report(home, report_id))
    except AxisError as error:
        fail(error)
    echo_result(result, as_json, render_comparison)
    sys.exit(1 if result.has_regression else 0)
