"""``axis score``: score a finished report again from what is on disk."""

from __future__ import annotations

import click

from axis_eval.cli._common import echo_result, fail


@click.command("score")
@click.argument("report_id")
@click.option("-c", "--config", "config_path", help="Config file or folder.")
@click.option("--judge", help="Judge with this API model (anthropic:<model>) or agent name.")
@click.option("--json", "as_json", is_flag=True, help="Print the updated manifest as JSON.")
def score_command(
    report_id: str, config_path: str | None, judge: str | None, as_json: bool
) -> None:
    """Score a finished report again from what is on disk (weights, calibration, judge)."""
    import asyncio

    from axis_eval import AxisError, load_config, read_report
    from axis_eval.report.render import render_report_detail
    from axis_eval.runs.rescored import save_rescore
    from axis_eval.runs.store import report_folder
    from axis_eval.scoring.rescore import rescore_report

    try:
        loaded = load_config(config_path)
        manifest = read_report(loaded.config_dir, report_id)
        folder = report_folder(loaded.config_dir, manifest.report_id)
        result = asyncio.run(rescore_report(folder, loaded, judge=judge))
        updated = save_rescore(folder, result)
    except AxisError as error:
        fail(error)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"judge calls: {result.calls} ({result.cached_calls} from the cache), "
        f"tokens: {result.input_tokens} in / {result.output_tokens} out",
        err=True,
    )
    echo_result(updated, as_json, render_report_detail)
