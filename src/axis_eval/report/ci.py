"""The files CI reads after ``axis run``: ``--junit``, ``--summary-md`` and the baseline
comparison, each rendered from the one set of verdicts (:mod:`axis_eval.report.verdicts`)
and written atomically.

The CLI reaches CI through this module only, so the verdicts are named here too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from axis_eval.errors import UsageError
from axis_eval.files import atomic_write_text
from axis_eval.report.verdicts import CiVerdicts, below_min_lines, verdicts
from axis_eval.runs.store import COMPARISON_FILE

if TYPE_CHECKING:
    # Annotations only: a run without --compare-baseline never loads the baseline models.
    from axis_eval.runs.baseline_models import BaselineComparison

__all__ = [
    "OutputWriteError",
    "below_min_lines",
    "check_output_path",
    "render_outputs",
    "save_comparison",
    "verdicts",
    "write_output",
]


def check_output_path(path: str, flag: str) -> Path:
    """The absolute path of an output file, after checking it can be written.

    Checked before the run starts, so a typo does not cost a whole run. The file itself
    is written later, atomically (a temporary file in the same folder, then a rename).

    Raises:
        UsageError: the folder is missing or not writable, or the path is a folder.
    """
    target = Path(path).expanduser().absolute()
    folder = target.parent
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a folder", hint="give a file name")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(
            f"{flag} {path}: the folder {folder} {what}",
            hint=f"create it first (mkdir -p {folder})",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: the folder {folder} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{flag} {path}: the file is not writable")
    return target


class OutputWriteError(UsageError):
    """An output file could not be written after the run (exit 2; the report is saved)."""


def write_output(path: Path, text: str, flag: str) -> None:
    """Write ``text`` to ``path`` atomically.

    Raises:
        OutputWriteError: the write failed (folder removed, disk full …) during the run.
    """
    try:
        atomic_write_text(path, text)
    except OSError as error:
        raise OutputWriteError(f"{flag} {path}: cannot write: {error.strerror or error}") from None


def save_comparison(report_dir: Path, comparison: BaselineComparison) -> Path:
    """``<report folder>/baseline-comparison.json``, the comparison by alias, atomically."""
    target = report_dir / COMPARISON_FILE
    text = comparison.model_dump_json(by_alias=True, indent=2) + "\n"
    write_output(target, text, "baseline comparison")
    return target


def render_outputs(
    result: CiVerdicts, *, junit: Path | None, summary_md: Path | None
) -> Sequence[tuple[Path, str, str]]:
    """(path, text, flag) for every requested CI file."""
    out: list[tuple[Path, str, str]] = []
    # Loaded on demand: most runs ask for neither file (XML and statistics imports).
    if junit is not None:
        from axis_eval.report.junit import render_junit

        out.append((junit, render_junit(result), "--junit"))
    if summary_md is not None:
        from axis_eval.report.summary_md import render_summary_md

        out.append((summary_md, render_summary_md(result), "--summary-md"))
    return out
