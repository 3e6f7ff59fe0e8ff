"""``axis init``: a config and a sample scenario in the current folder."""

from __future__ import annotations

import click

from axis_eval.cli._common import fail


@click.command("init")
@click.option("-s", "--scenarios", default="./scenarios", show_default=True)
@click.option("-a", "--agent", "agents", multiple=True, help="Agent names (default claude-code).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "yaml", "toml"]),
    default="json",
    show_default=True,
)
@click.option("-f", "--force", is_flag=True, help="Overwrite existing files.")
def init_command(scenarios: str, agents: tuple[str, ...], fmt: str, force: bool) -> None:
    """Scaffold a config and a sample scenario in the current folder."""
    from axis_eval import AxisError, init_project
    from axis_eval.planning.select import split_list

    try:
        written = init_project(
            ".",
            agents=split_list(agents) or None,
            scenarios=scenarios,
            fmt=fmt,  # type: ignore[arg-type]
            force=force,
        )
    except AxisError as error:
        fail(error)
    for path in written:
        click.echo(f"Created {path}")
    click.echo("Run `axis run --dry-run` to see the jobs, then `axis run`.")
