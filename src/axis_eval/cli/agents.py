"""``axis agents install|list``: the pinned agent CLIs in axis-eval's cache."""

from __future__ import annotations

import json

import click

from axis_eval.cli._common import fail


@click.group("agents")
def agents_group() -> None:
    """Pinned agent CLIs: install them into axis-eval's cache, list them."""


@agents_group.command("install")
@click.argument("names", nargs=-1)
@click.option("--force", is_flag=True, help="Reinstall even when present.")
@click.option(
    "--typescript",
    is_flag=True,
    help="Also install the pinned TypeScript loader (tsx) for .ts configs and scenarios; "
    "alone, only it.",
)
def agents_install(names: tuple[str, ...], force: bool, typescript: bool) -> None:
    """Install pinned agent CLIs from npm (all installable ones without NAMES)."""
    from axis_eval import AxisError
    from axis_eval._util.node_ts import TSX_SPEC, install_tsx
    from axis_eval.adapters.install import PINS, install

    def log(message: str) -> None:
        click.echo(message, err=True)

    try:
        if typescript:
            click.echo(f"typescript ({TSX_SPEC}): {install_tsx(force=force, log=log)}")
        done = install(names or ([] if typescript else sorted(PINS)), force=force, log=log)
    except AxisError as error:
        fail(error)
    for name, path in done.items():
        click.echo(f"{name}: {path}")


@agents_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def agents_list(as_json: bool) -> None:
    """Show every pinned agent CLI, its version and whether it is installed."""
    from axis_eval.adapters.install import PINS, agents_dir, installed_binary

    rows = [
        {
            "agent": name,
            "package": pkg.package,
            "pinned": pkg.version,
            "installed": str(path) if (path := installed_binary(name)) else None,
        }
        for name, pkg in sorted(PINS.items())
    ]
    if as_json:
        click.echo(json.dumps({"dir": str(agents_dir()), "agents": rows}, indent=2))
        return
    click.echo(f"Agent CLIs in {agents_dir()}")
    for row in rows:
        state = "installed" if row["installed"] else "not installed"
        spec = f"{row['package']}@{row['pinned']}"
        click.echo(f"  {row['agent']:<12} {spec:<46} {state}")
