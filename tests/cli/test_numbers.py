"""Every number a command takes is finite: NaN and ±inf exit 2 naming the option.

click's ``FLOAT`` and ``FloatRange`` let ``nan`` through (no comparison with NaN fails):
``--grace-seconds nan`` hung a run (the SIGKILL never came) and ``--min-pass-rate nan``
was accepted. Every float option uses the one type, ``cli._common.FiniteFloat``; the walk
below finds every parameter of every command, so a new option cannot slip past it.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from axis_eval.cli._common import FiniteFloat, finite_float
from axis_eval.cli.main import COMMANDS

Axis = Callable[..., Any]


def commands() -> Iterator[tuple[list[str], click.Command]]:
    """Every command and sub-command of ``axis``, with the words that invoke it."""
    for name, (module, attr) in sorted(COMMANDS.items()):
        command = getattr(importlib.import_module(module), attr)
        yield from _walk([name], command)


def _walk(path: list[str], command: click.Command) -> Iterator[tuple[list[str], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _walk([*path, name], sub)


def _types(kind: click.ParamType) -> Iterator[click.ParamType]:
    """A parameter's type, and the types inside a tuple type."""
    yield kind
    if isinstance(kind, click.Tuple):
        for inner in kind.types:
            yield from _types(inner)


def float_options() -> list[tuple[list[str], str]]:
    """(command words, option flag) of every float-valued option."""
    found = []
    for path, command in commands():
        for param in command.params:
            if any(isinstance(t, click.types.FloatParamType) for t in _types(param.type)):
                found.append((path, param.opts[-1]))
    return found


def test_the_walk_finds_the_float_options_we_know() -> None:
    flags = {flag for _, flag in float_options()}
    assert {"--grace-seconds", "--min-pass-rate"} <= flags
    assert len(list(commands())) > 10, "every command and sub-command is walked"


def test_every_float_parameter_of_every_command_is_a_finite_float() -> None:
    loose = [
        f"axis {' '.join(path)} {param.opts[-1] if param.opts else param.name}"
        for path, command in commands()
        for param in command.params
        for kind in _types(param.type)
        if isinstance(kind, click.types.FloatParamType) and not isinstance(kind, FiniteFloat)
    ]
    assert loose == [], "use cli._common.finite_float() for these (NaN/inf must exit 2)"


def test_integer_parameters_cannot_be_nan_but_have_their_ranges() -> None:
    """click's INT refuses 'nan' and 'inf' itself; the meaningful lower bounds are set."""
    bounded = {}
    for path, command in commands():
        for param in command.params:
            if isinstance(param.type, click.IntRange):
                bounded[(path[0], param.opts[-1])] = param.type.min
    assert bounded[("run", "--concurrency")] == 1
    assert bounded[("run", "--pass-score")] == 0
    assert bounded[("run", "--min-score")] == 0
    assert bounded[("reports", "--limit")] == 1


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "+Infinity", "1e999"])
@pytest.mark.parametrize(("path", "flag"), float_options(), ids=lambda x: str(x))
def test_non_finite_values_exit_2_naming_the_option(
    axis: Axis, tmp_path: Path, path: list[str], flag: str, value: str
) -> None:
    # No config in tmp_path: without the check the command would go on (and fail later,
    # differently, or run with a NaN); with it, parsing stops at the option.
    done = axis(*path, flag, value, cwd=tmp_path)
    assert done.exit_code == 2, done.stderr
    assert f"Invalid value for '{flag}'" in done.stderr
    assert "is not a finite number" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--grace-seconds", "-1", "-1.0 is not in the range x>=0"),
        ("--min-pass-rate", "1.5", "1.5 is not in the range 0<=x<=1"),
        ("--min-pass-rate", "-0.1", "is not in the range 0<=x<=1"),
        ("--grace-seconds", "soon", "'soon' is not a valid float"),
    ],
)
def test_ranges_still_hold(axis: Axis, tmp_path: Path, flag: str, value: str, message: str) -> None:
    done = axis("run", flag, value, cwd=tmp_path)
    assert done.exit_code == 2
    assert message in done.stderr


def test_finite_values_pass_through() -> None:
    kind = finite_float(0, 1)
    assert kind.convert("0.67", None, None) == pytest.approx(0.67)
    assert kind.convert(1, None, None) == 1.0
    with pytest.raises(click.BadParameter, match="not a finite number"):
        kind.convert(math.nan, None, None)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("grace_s", math.nan),
        ("grace_s", math.inf),
        ("grace_s", -1.0),
        ("min_pass_rate", math.nan),
        ("min_pass_rate", 2.0),
        ("pass_score", 101),
        ("concurrency", 0),
    ],
)
def test_the_library_options_refuse_the_numbers_the_cli_refuses(
    tmp_path: Path, field: str, value: float
) -> None:
    from axis_eval import RunOptions, load_config
    from axis_eval.errors import UsageError

    (tmp_path / "axis.config.json").write_text('{"agents": ["codex"]}')
    loaded = load_config(str(tmp_path))
    with pytest.raises(UsageError, match=f"RunOptions.{field}: expected"):
        RunOptions(loaded=loaded, **{field: value})
    RunOptions(loaded=loaded)  # the defaults pass
