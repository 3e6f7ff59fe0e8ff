"""What every command shares: ending on an AxisError, finding the folder of `.axis/`, and
printing a result as JSON or as text."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from pydantic import BaseModel

Shown = TypeVar("Shown", bound="BaseModel | Sequence[BaseModel]")


def fail(error: Any) -> NoReturn:
    """Print an AxisError as ``error: …`` (with its hint) and exit with its code."""
    click.echo(f"error: {error.render()}", err=True)
    sys.exit(error.exit_code)


def warn(lines: list[str]) -> None:
    """Each line as ``warning: …`` on stderr."""
    for line in lines:
        click.echo(f"warning: {line}", err=True)


def axis_home(config_path: str | None) -> str:
    """The folder holding ``.axis/``: the config's (valid or not), else the current folder."""
    from pathlib import Path

    from axis_eval import ConfigError, find_config

    try:
        return str(find_config(config_path).parent)
    except ConfigError:
        if config_path is None:
            return str(Path.cwd())
        raise


def echo_result(shown: Shown, as_json: bool, render: Callable[[Shown], str]) -> None:
    """``shown`` on stdout: its file format with ``--json`` (camelCase keys), else rendered.

    A list prints as a JSON array of its models (``json.dumps``, as the list commands have
    always printed it); one model as pydantic writes it.
    """
    if not as_json:
        click.echo(render(shown))
    elif isinstance(shown, Sequence):
        import json

        data = [m.model_dump(mode="json", by_alias=True) for m in shown]
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(shown.model_dump_json(by_alias=True, indent=2))
