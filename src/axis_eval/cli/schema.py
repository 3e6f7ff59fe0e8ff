"""``axis schema``: the JSON Schema of each file format."""

from __future__ import annotations

import json

import click


@click.command("schema")
@click.argument(
    "name",
    required=False,
    type=click.Choice(["config", "scenario", "report", "result", "tape", "baseline"]),
)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Write files here.")
def schema_command(name: str | None, out_dir: str | None) -> None:
    """Print the JSON Schema of a file format (all of them without NAME)."""
    from pathlib import Path

    from axis_eval.schemas import SCHEMA_NAMES, schema_for, write_schemas

    if out_dir:
        for path in write_schemas(Path(out_dir)):
            click.echo(f"wrote {path}", err=True)
        return
    if name:
        click.echo(json.dumps(schema_for(name), indent=2))
    else:
        click.echo(json.dumps({n: schema_for(n) for n in SCHEMA_NAMES}, indent=2))
