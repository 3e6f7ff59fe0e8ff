"""``axis reports [ID | diff A B]``: list reports, show one, write its page, diff two."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from axis_eval.cli._common import axis_home, echo_result, fail

if TYPE_CHECKING:
    from axis_eval import ReportManifest


_CONFIG_HELP = "Config file or folder (locates .axis/)."


@click.command("diff")
@click.argument("a_id", metavar="A")
@click.argument("b_id", metavar="B")
@click.option("-c", "--config", "config_path", help=_CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
def reports_diff_command(a_id: str, b_id: str, config_path: str | None, as_json: bool) -> None:
    """Per-pair score deltas from report A to report B (IDs or `latest`)."""
    _reports_diff(a_id, b_id, config_path, as_json)


class _ReportsCommand(click.Command):
    """``axis reports`` whose first word may be the subcommand ``diff``.

    ``reports`` takes a report ID as its argument, so it cannot be a click group (a group
    reads its first word as a command name); a plain command read ``diff --help`` as its
    own ``--help`` and printed the page of ``reports``. Here ``diff`` is parsed as its own
    command, with its own options and ``--help`` page.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == reports_diff_command.name:
            # Named from the root so its usage reads `axis reports diff`, not with the
            # `[ID | diff A B]` of this command's argument in between.
            name = f"{ctx.info_name or 'reports'} {reports_diff_command.name}"
            ctx.meta[_DIFF] = reports_diff_command.make_context(name, args[1:], parent=ctx.parent)
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        sub = ctx.meta.pop(_DIFF, None)
        if isinstance(sub, click.Context):
            with sub:
                return reports_diff_command.invoke(sub)
        return super().invoke(ctx)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(f"See `{ctx.command_path} diff --help` for `diff A B`.")


_DIFF = "axis.reports.diff"
"""Where :class:`_ReportsCommand` keeps the parsed ``diff`` between parse and invoke."""


@click.command("reports", cls=_ReportsCommand)
@click.argument("args", nargs=-1, metavar="[ID | diff A B]")
@click.option("-c", "--config", "config_path", help=_CONFIG_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="List at most this many reports, newest first.",
)
@click.option(
    "--html",
    "html_out",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[PATH]",
    help="Write the report's HTML page again (bare: report.html in its folder) and print its path.",
)
def reports_command(
    args: tuple[str, ...], config_path: str | None, as_json: bool, limit: int, html_out: str | None
) -> None:
    """List reports, show one (ID or `latest`), or `diff A B`: per-pair deltas from A to B."""
    from axis_eval import AxisError, list_reports, read_report
    from axis_eval.report.render import render_report_detail, render_report_list

    if args and args[0] == "diff":
        if len(args) != 3:
            raise click.UsageError("usage: axis reports diff A B")
        _reports_diff(args[1], args[2], config_path, as_json)
        return
    if len(args) > 1:
        raise click.UsageError(f"unexpected arguments: {' '.join(args[1:])}")
    report_id = args[0] if args else None
    if html_out is not None and report_id is None:
        raise click.UsageError("--html needs a report: axis reports ID --html [PATH]")
    try:
        config_dir = axis_home(config_path)
        if report_id is None:
            manifests = list_reports(config_dir)
            # --limit cuts the JSON list; the table says how many it left out.
            echo_result(manifests[:limit], as_json, lambda _: render_report_list(manifests, limit))
            return
        manifest = read_report(config_dir, report_id)
        if html_out is not None:
            _reports_html(config_dir, manifest, html_out)
            return
    except AxisError as error:
        fail(error)
    echo_result(manifest, as_json, render_report_detail)


def _reports_html(config_dir: str, manifest: ReportManifest, html_out: str) -> None:
    from pathlib import Path

    from axis_eval.report.html import write_html
    from axis_eval.runs.store import report_folder

    try:
        written = write_html(
            report_folder(config_dir, manifest.report_id),
            Path(html_out) if html_out else None,
            manifest=manifest,
        )
    except OSError as exc:
        click.echo(
            f"error: --html {html_out}: cannot write the page: {exc.strerror or exc}", err=True
        )
        sys.exit(2)
    click.echo(str(written))


def _reports_diff(a_id: str, b_id: str, config_path: str | None, as_json: bool) -> None:
    from axis_eval import AxisError, read_report
    from axis_eval.report.render import diff_reports, render_report_diff

    try:
        config_dir = axis_home(config_path)
        diff = diff_reports(read_report(config_dir, a_id), read_report(config_dir, b_id))
    except AxisError as error:
        fail(error)
    echo_result(diff, as_json, render_report_diff)
