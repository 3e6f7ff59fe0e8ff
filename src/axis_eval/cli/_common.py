"""What every command shares: ending on an AxisError, and finding the folder of `.axis/`."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click


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
