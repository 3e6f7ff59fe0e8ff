"""``axis export [ID|latest] --otel FILE|URL --inspect FILE``: a finished report in the
formats other tools read (docs/export.md)."""

from __future__ import annotations

import click

from axis_eval.cli._common import axis_home, fail


@click.command("export")
@click.argument("report_id", metavar="[ID|latest]", default="latest")
@click.option("-c", "--config", "config_path", help="Config file or folder (locates .axis/).")
@click.option(
    "--otel",
    "otel",
    metavar="FILE|URL",
    help="OpenTelemetry traces (GenAI semantic conventions): an OTLP/JSON file, or an "
    "http(s) OTLP/HTTP endpoint (POSTed to /v1/traces when the URL has no path).",
)
@click.option(
    "--inspect",
    "inspect_out",
    metavar="FILE",
    help="An Inspect AI eval log (one sample per run) that `inspect view` opens.",
)
def export_command(
    report_id: str, config_path: str | None, otel: str | None, inspect_out: str | None
) -> None:
    """Export a report (ID or `latest`) as OpenTelemetry traces or an Inspect AI eval log."""
    from pathlib import Path

    from axis_eval import AxisError, read_report
    from axis_eval.errors import UsageError
    from axis_eval.runs.store import report_folder

    try:
        if not otel and not inspect_out:
            raise UsageError(
                "axis export: nothing to export",
                hint="give --otel FILE|URL and/or --inspect FILE",
            )
        config_dir = axis_home(config_path)
        manifest = read_report(config_dir, report_id)
        folder = report_folder(config_dir, manifest.report_id)
        if otel:
            from axis_eval.export.otel_send import export_otel

            done = export_otel(folder, manifest, otel)
            sent = f" in {done.requests} request(s)" if done.requests else ""
            click.echo(
                f"otel: {done.runs} run(s) as {done.runs} trace(s), {done.spans} span(s), "
                f"{done.events} evaluation event(s){sent} → {done.target}"
            )
        if inspect_out:
            from axis_eval.export.inspect_log import write_inspect_log

            samples = write_inspect_log(folder, manifest, Path(inspect_out))
            click.echo(f"inspect: {samples} sample(s) → {inspect_out}")
    except AxisError as error:
        fail(error)
