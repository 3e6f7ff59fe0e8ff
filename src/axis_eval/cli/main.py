"""The ``axis`` command group: one module per command (group) registers itself here.

Each command turns its flags into an API call, renders the result and exits; it alone turns
an :class:`~axis_eval.errors.AxisError` into a message and an exit code
(:func:`axis_eval.cli._common.fail`). The command modules import only click at the top and
the library inside their functions, so ``axis --version`` and ``axis --help`` stay fast.
"""

from __future__ import annotations

import click

from axis_eval._version import __version__
from axis_eval.cli import import_gc
from axis_eval.cli.agents import agents_group
from axis_eval.cli.baseline import baseline_group
from axis_eval.cli.init import init_command
from axis_eval.cli.model_server import model_server_command
from axis_eval.cli.reports import reports_command
from axis_eval.cli.run import run_command
from axis_eval.cli.schema import schema_command
from axis_eval.cli.score import score_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="axis")
def cli() -> None:
    """axis-eval: run AI coding agents on scenarios and score them (AXIS)."""


for _command in (
    run_command,
    schema_command,
    init_command,
    score_command,
    reports_command,
    agents_group,
    model_server_command,
    baseline_group,
):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point (``axis = axis_eval.cli.main:main``)."""
    import_gc.raise_threshold()
    try:
        cli(prog_name="axis")
    finally:
        import_gc.freeze_at_exit()
