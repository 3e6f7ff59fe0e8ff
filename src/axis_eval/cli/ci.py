"""``axis run``'s CI flags: ``--min-score``, ``--compare-baseline``, ``--junit`` and
``--summary-md``, from checks before the run to the files and exit code after it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from axis_eval.cli._common import warn
from axis_eval.errors import AxisError, UsageError

if TYPE_CHECKING:
    from axis_eval import RunOutcome
    from axis_eval.runs.baseline_models import Baseline


@dataclass
class CiFlags:
    """``--min-score``, ``--compare-baseline``, ``--junit`` and ``--summary-md`` of a run.

    Paths and the baseline are checked before the run (exit 2, resp. 1, before any job
    starts). After it, whatever the outcome (failures, regressions, an interrupted run
    with its report): the summary table on stderr, ``baseline-comparison.json`` beside the
    report, the JUnit and Markdown files, and the exit code.
    """

    min_score: int | None
    baseline_name: str | None
    junit_arg: str | None
    summary_md_arg: str | None
    no_score: bool
    junit: Path | None = None
    """The checked ``--junit`` path (set by :meth:`check_paths`)."""
    summary_md: Path | None = None
    """The checked ``--summary-md`` path (set by :meth:`check_paths`)."""
    baseline: Baseline | None = None
    """The ``--compare-baseline`` baseline (set by :meth:`load_baseline`)."""

    def check_paths(self) -> None:
        """Raises UsageError (exit 2) for an output path that cannot be written."""
        from axis_eval.report.ci import check_output_path

        if self.junit_arg is not None:
            self.junit = check_output_path(self.junit_arg, "--junit")
        if self.summary_md_arg is not None:
            self.summary_md = check_output_path(self.summary_md_arg, "--summary-md")
        if self.junit is not None and self.junit == self.summary_md:
            raise UsageError("--junit and --summary-md name the same file")

    def load_baseline(self, config_dir: str) -> None:
        """Raises AxisError for a missing or bad baseline, before the run."""
        if self.baseline_name is not None and not self.no_score:
            from axis_eval.cli.baseline import load_for_run  # only with --compare-baseline

            self.baseline = load_for_run(config_dir, self.baseline_name)

    def finish(self, outcome: RunOutcome, as_json: bool) -> int:
        """Print, compare, write the CI files; the exit code."""
        from axis_eval.report.ci import below_min_lines, render_outputs, verdicts, write_output
        from axis_eval.report.render import render_run_summary

        manifest = outcome.manifest
        notes: list[str] = []
        if self.no_score:
            for flag, value in (
                ("--compare-baseline", self.baseline_name),
                ("--min-score", self.min_score),
            ):
                if value is not None:
                    notes.append(f"{flag} {value} skipped: --no-score scored nothing")
        errors: list[AxisError] = []
        comparison = None
        if self.baseline is not None:
            try:
                from axis_eval.cli.baseline import compare_after_run

                comparison = compare_after_run(self.baseline, manifest, outcome.report_dir)
            except AxisError as error:
                errors.append(error)
        min_score = None if self.no_score else self.min_score
        result = verdicts(manifest, outcome.report_dir, min_score=min_score, comparison=comparison)
        if not as_json:
            click.echo(render_run_summary(result), err=True)
        if comparison is not None:
            from axis_eval.cli.baseline import comparison_lines

            click.echo("", err=True)
            click.echo("\n".join(comparison_lines(comparison)), err=True)
        below = below_min_lines(result)
        if below:
            click.echo("", err=True)
            click.echo("\n".join(below), err=True)
        warn(notes)
        click.echo(f"  Report saved: {outcome.report_dir}", err=True)
        from axis_eval.runs.store import HTML_FILE

        page = outcome.report_dir / HTML_FILE
        if page.is_file():
            click.echo(f"  HTML report:  {page}", err=True)
        click.echo(f"  View details: axis reports {manifest.report_id}", err=True)
        for path, text, flag in render_outputs(
            result, junit=self.junit, summary_md=self.summary_md
        ):
            try:
                write_output(path, text, flag)
                label = "JUnit XML:" if flag == "--junit" else "Summary:"
                click.echo(f"  {label:<13} {path}", err=True)
            except AxisError as write_error:
                errors.append(write_error)
        for problem in errors:
            click.echo(f"error: {problem.render()}", err=True)
        code = outcome.exit_code
        if (comparison is not None and comparison.has_regression) or result.gate_failed:
            code = code or 1
        if errors and code in (0, 1):  # a file CI needs is missing: say so louder than a fail
            code = max(code, *(e.exit_code for e in errors))
        return code
