"""What every command shares: ending on an AxisError (or on a bug), the one number type of
every float option, finding the folder of `.axis/`, and printing a result as JSON or as
text."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import BaseModel

    from axis_eval.redact import Redactor

Shown = TypeVar("Shown", bound="BaseModel | Sequence[BaseModel]")


def fail(error: Any) -> NoReturn:
    """Print an AxisError as ``error: …`` (with its hint) and exit with its code."""
    click.echo(f"error: {error.render()}", err=True)
    sys.exit(error.exit_code)


def internal_error(
    exc: BaseException,
    *,
    folder: Path | None = None,
    context: str = "",
    redactor: Redactor | None = None,
) -> NoReturn:
    """A bug ended the command: one paragraph on stderr, the traceback in a file, exit 3.

    The traceback goes to ``folder/crash.log`` (a report folder) or else to a new file in
    the temporary folder, through ``redactor`` (default: the secret-looking variables of
    this process's environment). ``context`` is a sentence saying what was already done
    (a report saved…). No traceback on the terminal: there is no debug flag, and the
    file is what a bug report needs.
    """
    import os
    import traceback

    from axis_eval.errors import EXIT_INTERNAL, one_line
    from axis_eval.redact import Redactor

    redact = redactor or Redactor.from_env(os.environ, os.environ)
    error = one_line(exc)
    where = _write_crash_log(redact.text("".join(traceback.format_exception(exc))), folder)
    text = (
        f"error: internal error: axis-eval failed ({redact.text(error)}). This is a bug in "
        f"axis-eval, not in your input."
    )
    if context:
        text += f" {context}"
    text += (
        f" Full traceback: {where} (please attach it to a bug report)."
        if where
        else " The traceback could not be written to a file."
    )
    click.echo(text, err=True)
    sys.exit(EXIT_INTERNAL)


def _write_crash_log(text: str, folder: Path | None) -> str | None:
    """The traceback in ``folder/crash.log``, else a new temporary file; its path or None."""
    import os
    import tempfile

    from axis_eval.files import atomic_write_text
    from axis_eval.runs.store import CRASH_FILE

    if folder is not None:
        try:
            atomic_write_text(folder / CRASH_FILE, text)
            return str(folder / CRASH_FILE)
        except OSError:
            pass
    try:
        fd, path = tempfile.mkstemp(prefix="axis-crash-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as file:
            file.write(text)
        return path
    except OSError:
        return None


class FiniteFloat(click.FloatRange):
    """The type of every float option: a finite number (never NaN or ±inf) in a range.

    click's ``FLOAT`` and ``FloatRange`` accept ``nan`` (no comparison with NaN fails),
    ``inf`` and ``-inf``: ``--grace-seconds nan`` meant an agent never killed.
    ``tests/cli/test_numbers.py`` checks that every float option of every command uses
    this type.
    """

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def finite_float(min: float | None = None, max: float | None = None) -> FiniteFloat:
    """A float option's type: finite, from ``min`` to ``max`` (inclusive, when given)."""
    return FiniteFloat(min=min, max=max)


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
