"""Every ``--help`` page at 80 columns: whole, its own, and every option described."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from axis_eval.cli.main import cli

WIDTH = 80

EXTRA_SUBCOMMANDS = {("reports",): ["diff"]}
"""Subcommands a plain command parses itself (``reports`` takes an ID, so it is no group)."""


def _commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and subcommand, by its words after ``axis``."""
    out: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(path: tuple[str, ...], command: click.Command) -> None:
        out.append((path, command))
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk((*path, name), sub)

    walk((), cli)
    from axis_eval.cli.reports import reports_diff_command

    out.append((("reports", "diff"), reports_diff_command))
    assert all(tuple(p) in {c[0][:-1] for c in out} for p in EXTRA_SUBCOMMANDS)
    return out


COMMANDS = _commands()


def _help(*words: str) -> str:
    runner = CliRunner(env={"COLUMNS": str(WIDTH)})
    result = runner.invoke(cli, [*words, "--help"], prog_name="axis")
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"run", "reports", "reports diff", "baseline compare", "agents install"} <= names
    assert len(names) >= 15


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "axis")
def test_help_page_fits_80_columns_and_is_its_own(path: tuple[str, ...]) -> None:
    page = _help(*path)
    too_wide = [line for line in page.splitlines() if len(line) > WIDTH]
    assert not too_wide, too_wide
    usage = " ".join(("axis", *path))
    assert page.startswith(f"Usage: {usage} "), page.splitlines()[0]


@pytest.mark.parametrize("path", [p for p, c in COMMANDS if isinstance(c, click.Group)])
def test_command_lists_are_never_cut(path: tuple[str, ...]) -> None:
    page = _help(*path)
    listing = page.split("Commands:\n", 1)[1]
    assert "..." not in listing, listing
    group = dict(COMMANDS)[path]
    assert isinstance(group, click.Group)
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        assert sub is not None and sub.help
        # The whole first sentence is in the list (rewrapped: compare the words).
        first = sub.get_short_help_str(limit=10_000)
        assert " ".join(first.split()) in " ".join(listing.split()), (name, first)


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "axis")
def test_every_option_is_described(path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    page = " ".join(_help(*path).split())
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"axis {' '.join(path)} {param.opts[-1]} has no help"
            assert " ".join(param.help.split()[:4]) in page, param.opts


def test_reports_diff_has_its_own_options_and_still_runs_from_reports() -> None:
    page = _help("reports", "diff")
    assert "Per-pair score deltas" in page and "--limit" not in page
    assert "axis reports diff --help" in _help("reports")
    bad = CliRunner().invoke(cli, ["reports", "diff", "only-a"])
    assert bad.exit_code == 2 and "Missing argument 'B'" in bad.stderr
