"""``axis init``: a config, a sample scenario and its tape in the current folder."""

from __future__ import annotations

import click

from axis_eval.cli._common import fail


@click.command("init")
@click.option(
    "-s",
    "--scenarios",
    default="./scenarios",
    show_default=True,
    help="Folder for the sample scenario (the config's `scenarios`).",
)
@click.option("-a", "--agent", "agents", multiple=True, help="Agent names (default claude-code).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "yaml", "toml"]),
    default="json",
    show_default=True,
    help="Format of the config file written.",
)
@click.option("-f", "--force", is_flag=True, help="Overwrite existing files.")
def init_command(scenarios: str, agents: tuple[str, ...], fmt: str, force: bool) -> None:
    """Scaffold a config, a sample scenario and a tape (scored offline) in the current folder."""
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
    click.echo(_next_steps([a.strip().lower() for a in split_list(agents)] or ["claude-code"], fmt))


def _next_steps(agents: list[str], fmt: str) -> str:
    """What to run next: install the pinned CLIs, a scored offline run, then live."""
    from axis_eval import load_config, plan
    from axis_eval.adapters.install import install_command, installed_binary
    from axis_eval.pipeline import needed_keys

    loaded = load_config(".")
    keys = " and ".join(needed_keys(plan(loaded), loaded)) or "no key"
    missing = [a for a in agents if installed_binary(a) is None]
    install = (
        f"  {install_command(missing)}   # the pinned CLI(s), into axis-eval's cache"
        if missing
        else f"  (the pinned CLI of {', '.join(agents)} is installed)"
    )
    live = (
        f"  axis run --profile live   # the real APIs: needs {keys}"
        if fmt != "toml"
        else f"  For the real APIs, delete [model_server] from the config: needs {keys}."
    )
    return "\n".join(
        [
            "",
            "Next:",
            install,
            "  axis run --dry-run        # the jobs, in order; nothing runs",
            "  axis run                  # offline and scored: the real agent CLI against the",
            "                            # scripted model in tape.yaml, which scripts the judge",
            "                            # too (no API key, no tokens)",
            live,
        ]
    )
