"""``run``: load → plan → pre-flight → execute → save → report; the only package wiring stages.

The modules, in the order a run meets them:

- :mod:`.options`: :class:`RunOptions` (what ``axis run`` takes), :class:`RunOutcome`,
  :class:`RunAborted`, :func:`config_hash`.
- :mod:`.checks`: :func:`load_adapters`, :func:`preflight` (everything that can fail before
  a job starts), :func:`predict_preflight` (the same as a dry run's warnings),
  :func:`needed_keys` and the run's redactor; :mod:`.tape_judging`: does the tape answer
  the judge.
- :mod:`.hooks`: ``beforeAll`` and ``afterAll``.
- :mod:`.session`: :class:`~.session.RunSession`, what the jobs of one run share (report
  writer, stop signal, token budget, scorer, job context) and the guards around them
  (signals, subreaper, sentinel, orphan reaper, time limit).
- :mod:`.resume`: ``--resume``: the plan to finish and the kept runs scored beside it.
- :mod:`.crash`: the safety net: whatever ends a run early closes its report (``crashed``
  or ``interrupted``), never left ``running``; :class:`~.crash.RunCrashed` (exit code 3).
- :mod:`.engine`: :func:`run` / :func:`run_async`, the steps in order.

Names load on first use (this file imports no module of the package up front), as for
every stage package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.pipeline.checks import (
        load_adapters as load_adapters,
        needed_keys as needed_keys,
        predict_preflight as predict_preflight,
        preflight as preflight,
    )
    from axis_eval.pipeline.crash import RunCrashed as RunCrashed
    from axis_eval.pipeline.engine import run as run, run_async as run_async
    from axis_eval.pipeline.options import (
        RunAborted as RunAborted,
        RunOptions as RunOptions,
        RunOutcome as RunOutcome,
        config_hash as config_hash,
    )

_EXPORTS = {
    "RunAborted": ".options",
    "RunOptions": ".options",
    "RunOutcome": ".options",
    "RunCrashed": ".crash",
    "config_hash": ".options",
    "load_adapters": ".checks",
    "needed_keys": ".checks",
    "predict_preflight": ".checks",
    "preflight": ".checks",
    "run": ".engine",
    "run_async": ".engine",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
