"""The ``axis`` command group: one module per command (group) registers itself here.

Each command turns its flags into an API call, renders the result and exits; it alone turns
an :class:`~axis_eval.errors.AxisError` into a message and an exit code
(:func:`axis_eval.cli._common.fail`). Anything else that escapes a command is a bug:
:func:`main` says so in one paragraph and exits 3, the traceback in a file
(:func:`axis_eval.cli._common.internal_error`). The command modules import only click at the top and
the library inside their functions, so ``axis --version`` and ``axis --help`` stay fast.
"""

from __future__ import annotations

import importlib

import click

from axis_eval._version import __version__
from axis_eval.cli import import_gc

COMMANDS = {
    "run": ("axis_eval.cli.run", "run_command"),
    "schema": ("axis_eval.cli.schema", "schema_command"),
    "init": ("axis_eval.cli.init", "init_command"),
    "score": ("axis_eval.cli.score", "score_command"),
    "reports": ("axis_eval.cli.reports", "reports_command"),
    "agents": ("axis_eval.cli.agents", "agents_group"),
    "model-server": ("axis_eval.cli.model_server", "model_server_command"),
    "baseline": ("axis_eval.cli.baseline", "baseline_group"),
    "export": ("axis_eval.cli.export", "export_command"),
    "view": ("axis_eval.cli.view", "view_command"),
}
"""Each command's module: imported only when that command runs (or ``--help`` lists them),
so ``axis run`` does not load the modules of the other commands."""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        home = COMMANDS.get(cmd_name)
        if home is None:
            return None
        command = getattr(importlib.import_module(home[0]), home[1])
        assert isinstance(command, click.Command) and command.name == cmd_name
        _full_short_help(command)
        return command


_WHOLE = 10_000
"""A short help longer than any docstring's first sentence: never cut."""


def _full_short_help(command: click.Command) -> None:
    """Give ``command`` and its subcommands their whole first sentence as short help.

    click cuts a command list's descriptions to fit one line with "..."; an explicit
    ``short_help`` is wrapped onto more lines instead, so `axis --help` says all of it.
    """
    if command.short_help is None and command.help:
        command.short_help = command.get_short_help_str(limit=_WHOLE)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _full_short_help(sub)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="axis")
def cli() -> None:
    """axis-eval: run AI coding agents on scenarios and score them (AXIS)."""


def main() -> None:
    """Console-script entry point (``axis = axis_eval.cli.main:main``)."""
    import_gc.raise_threshold()
    try:
        cli(prog_name="axis")
    except Exception as exc:  # a bug: one paragraph and exit 3, the traceback in a file
        from axis_eval.cli._common import internal_error

        internal_error(exc)
    finally:
        import_gc.freeze_at_exit()
