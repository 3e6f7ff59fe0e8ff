"""``axis score``: score a finished report again from what is on disk."""

from __future__ import annotations

import sys
from contextlib import nullcontext

import click

from axis_eval.cli._common import echo_result, fail


def _interactive() -> bool:
    """Can we ask? (stdin and stderr are terminals.)"""
    return sys.stdin.isatty() and sys.stderr.isatty()


@click.command("score")
@click.argument("report_id")
@click.option("-c", "--config", "config_path", help="Config file or folder.")
@click.option("--judge", help="Judge with this API model (anthropic:<model>) or agent name.")
@click.option(
    "--rejudge",
    type=click.IntRange(min=1, max=50),
    help="Judge each scored run's stored transcript K more times (answer cache bypassed) "
    "and report the judge's own spread beside the runs' spread.",
)
@click.option("--yes", "-y", is_flag=True, help="Re-judge without asking (needed without a TTY).")
@click.option("--json", "as_json", is_flag=True, help="Print the updated manifest as JSON.")
def score_command(
    report_id: str,
    config_path: str | None,
    judge: str | None,
    rejudge: int | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Score a finished report again from what is on disk (weights, calibration, judge).

    With --rejudge K the cost estimate is printed first and you are asked to confirm
    (--yes skips the question; with no terminal, --yes is required: exit 2 otherwise).
    """
    import asyncio

    from axis_eval import AxisError, load_config, read_report
    from axis_eval.errors import ConfigError
    from axis_eval.report.render import render_report_detail
    from axis_eval.runs.rescored import save_rescore
    from axis_eval.runs.store import report_folder
    from axis_eval.scoring.rescore import estimate_rejudge, judge_model_server, rescore_report

    try:
        loaded = load_config(config_path)
        manifest = read_report(loaded.config_dir, report_id)
        folder = report_folder(loaded.config_dir, manifest.report_id)
        with judge_model_server(loaded) if rejudge else nullcontext() as url:
            if rejudge:
                estimate = estimate_rejudge(
                    folder, loaded.config.judging, rejudge, judge=judge, model_server_url=url
                )
                click.echo(estimate.line(), err=True)
                if not yes:
                    if not _interactive():
                        raise ConfigError(
                            "--rejudge asks before it spends, and there is no terminal to ask",
                            hint="pass --yes to re-judge without asking",
                        )
                    if not click.confirm("Re-judge?", default=False, err=True):
                        click.echo("not re-judged: nothing changed", err=True)
                        sys.exit(1)
            result = asyncio.run(
                rescore_report(
                    folder, loaded, judge=judge, rejudge=rejudge or 0, model_server_url=url
                )
            )
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
    if rejudge:
        spends = result.rejudge_spend
        simulated = bool(spends) and all(s.cost_simulated for s in spends)
        costs = [s.cost_usd for s in spends if s.cost_usd is not None]
        estimated = any(s.cost_estimated for s in spends)
        money = f"{'≈' if estimated else ''}${sum(costs):.4f}" if costs else "cost unknown"
        money = "simulated (no money spent)" if simulated else money
        click.echo(
            f"re-judging: {sum(s.calls for s in spends)} calls, tokens: "
            f"{sum(s.input_tokens for s in spends)} in / "
            f"{sum(s.output_tokens for s in spends)} out, {money}",
            err=True,
        )
    echo_result(updated, as_json, render_report_detail)
