"""The exit code a finished run ends with, computed from its report alone."""

from __future__ import annotations

from axis_eval.errors import EXIT_FAILED, EXIT_OK
from axis_eval.report.models import ReportManifest


def exit_code_for(manifest: ReportManifest) -> int:
    """0 when every pair completed; 1 when a pair failed or scenarios failed to load.

    A repeated pair with one failed run still completed (the spec's rule), so one flaky
    run does not fail the suite. Cancelled pairs are the caller's business (130/143), except
    runs the infrastructure cancelled (a lost Dask cluster): nobody asked for that, so 1.
    """
    if manifest.summary.failed > 0 or manifest.summary.load_failures > 0:
        return EXIT_FAILED
    lost = any(
        run.status == "cancelled" and run.error_kind == "infrastructure"
        for pair in manifest.results
        for run in pair.runs
    )
    return EXIT_FAILED if lost else EXIT_OK
