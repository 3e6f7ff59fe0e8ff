"""The safety net of a run: whatever ends it early, its report is closed, never ``running``.

A bug anywhere between opening the report and the end of ``afterAll`` (a job's result that
cannot be saved, the display, the scoring of a resume, a hook that raises, the final
manifest that cannot be written) closes the report ``crashed``, with the error in
``error`` and the traceback in ``crash.log``, and raises :class:`RunCrashed` (exit code 3).
A SIGINT that reaches Python (outside the run's own signal handlers) or a cancelled task
closes it ``interrupted``. Either way every run saved so far keeps its ``result.json``, the
agents' process trees are gone first (the session's guards undo themselves on the way out:
each job kills its marked processes, the sentinel sweeps the rest; when an exception left
the event loop past them, :meth:`OpenReport.sweep` does) and ``axis run --resume`` re-runs
only the jobs that did not finish.
"""

from __future__ import annotations

import asyncio
import shlex
import traceback
from collections.abc import Callable
from pathlib import Path

from axis_eval.errors import EXIT_INTERNAL, EXIT_SIGINT, AxisError, one_line, one_line_text
from axis_eval.progress import Display
from axis_eval.report.models import ReportManifest
from axis_eval.runs.store import CRASH_FILE
from axis_eval.runs.writer import ReportWriter

"""The longest ``error`` a crashed manifest records (the full text is in ``crash.log``)."""


class RunCrashed(AxisError):
    """A bug ended ``axis run``; its report was closed ``crashed`` (exit code 3).

    Attributes:
        manifest: the report as it was closed.
        report_dir: its folder.
        error: the exception, one line.
        traceback_file: ``crash.log`` in the report folder (None when it could not be
            written).
        not_closed: why the report could not be closed (None when it was).
    """

    exit_code = EXIT_INTERNAL

    def __init__(
        self,
        manifest: ReportManifest,
        report_dir: Path,
        error: str,
        *,
        traceback_file: Path | None,
        not_closed: str | None,
        config_dir: str,
    ) -> None:
        self.manifest = manifest
        self.report_dir = report_dir
        self.error = error
        self.traceback_file = traceback_file
        self.not_closed = not_closed
        s = manifest.summary
        kept = s.runs_completed + s.runs_failed
        message = (
            f"internal error: axis-eval crashed ({error}). This is a bug in axis-eval, not "
            f"in your config or your agents. "
        )
        if not_closed is None:
            message += (
                f"Report {manifest.report_id} is saved as crashed, with {kept} of "
                f"{s.runs_total} run(s) finished and kept: {report_dir}. "
            )
        else:
            message += (
                f"The report could not be closed ({not_closed}); the runs saved so far are "
                f"in {report_dir}. "
            )
        message += (
            f"Full traceback: {traceback_file}."
            if traceback_file is not None
            else "The traceback could not be written to the report folder."
        )
        super().__init__(message, hint=resume_hint(manifest.report_id, config_dir))


def resume_hint(report_id: str, config_dir: str) -> str:
    """How to finish a report: ``axis run --resume ID`` (with ``-c`` off its folder)."""
    here = Path(config_dir).resolve() == Path.cwd().resolve()
    where = "" if here else f" -c {shlex.quote(config_dir)}"
    return f"`axis run{where} --resume {report_id}` runs only the jobs that did not finish"


class OpenReport:
    """The report a run has opened, until the run settles it (finished, or closed here).

    The engine closes it where the error surfaces (:meth:`close_after` in the run's main
    coroutine). A ``KeyboardInterrupt`` or ``SystemExit`` raised inside one of the run's
    tasks leaves the event loop at once instead, without passing there; the sync
    :func:`~.engine.run` then kills what is left of the run (:meth:`sweep`) and closes
    the report after the loop, through the same method.
    """

    def __init__(self, config_dir: str) -> None:
        self.config_dir = config_dir
        self.writer: ReportWriter | None = None
        self.display: Display | None = None
        self.token: str | None = None
        self.settled = False

    def opened(self, writer: ReportWriter, display: Display, token: str) -> None:
        """The report exists on disk (state ``running``) from now on; ``token``: the run's."""
        self.writer, self.display, self.token = writer, display, token

    def sweep(self) -> None:
        """SIGKILL every process still carrying this run's marker, blocking.

        For the one path where the run's own guards may not have run (an exception that
        left the event loop directly): the sentinel would only act once this process
        exits, and an API caller's process may live on.
        """
        if self.token is None or self.settled:
            return
        from axis_eval.execute.process import marker_entry
        from axis_eval.execute.process.sentinel_main import sweep

        sweep(marker_entry(f"{self.token}/"))

    def close_after(self, exc: BaseException) -> BaseException | None:
        """Close the report after ``exc`` (see :func:`close_after`); what to raise, or
        None when there is no report or it is already settled (raise ``exc`` as is)."""
        if self.writer is None or self.display is None or self.settled:
            return None
        self.settled = True
        return close_after(exc, self.writer, self.display, self.config_dir)


def close_after(
    exc: BaseException, writer: ReportWriter, display: Display, config_dir: str
) -> BaseException:
    """Close the report after ``exc`` ended the run; return what the caller raises.

    An interruption (``KeyboardInterrupt``, a cancelled or closed coroutine) closes it
    ``interrupted`` (exit code 130) and is raised again as it is. An :class:`AxisError`
    (an error raised on purpose, after the report was opened) closes it ``crashed`` with
    its message and exit code and is raised again as it is. Anything else is a bug: the
    report is closed ``crashed`` (exit code 3), the traceback goes to ``crash.log`` and
    the caller raises :class:`RunCrashed`.
    """
    _quietly(display.stop)
    report_id = writer.store.report_id
    if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError | GeneratorExit):
        not_closed = writer.close("interrupted", EXIT_SIGINT, None)
        state = "saved as interrupted" if not_closed is None else f"not closed ({not_closed})"
        hint = resume_hint(report_id, config_dir)
        _quietly(lambda: display.message(f"Interrupted: report {report_id} {state}. {hint}."))
        return exc
    if isinstance(exc, AxisError):
        writer.close("crashed", exc.exit_code, one_line_text(exc.message))
        return exc
    error = one_line(exc)
    traceback_file = _write_traceback(writer, exc)
    not_closed = writer.close("crashed", EXIT_INTERNAL, error)
    if not_closed is None:
        _quietly(lambda: _write_html(writer))
    return RunCrashed(
        writer.manifest,
        writer.store.folder,
        error,
        traceback_file=traceback_file,
        not_closed=not_closed,
        config_dir=config_dir,
    )


def _write_traceback(writer: ReportWriter, exc: BaseException) -> Path | None:
    """``crash.log`` in the report folder, through the run's redactor; None if it failed."""
    try:
        text = "".join(traceback.format_exception(exc))
        writer.store.write_text(CRASH_FILE, text)
        return writer.store.path(CRASH_FILE)
    except Exception:
        return None


def _write_html(writer: ReportWriter) -> None:
    """The crashed report's page, as every run ends with one (a view: may fail quietly)."""
    from axis_eval.report.html import write_html

    write_html(writer.store.folder, manifest=writer.manifest, written=writer.store)


def _quietly(call: Callable[[], object]) -> None:
    """Call ``call`` and ignore what it raises: the display must not hide the crash."""
    try:
        call()
    except Exception:
        return
