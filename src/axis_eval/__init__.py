"""axis-eval: run AI coding agents against scenarios, score them (AXIS), catch regressions.

The public API is loaded lazily so ``import axis_eval`` and ``axis --version`` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports
from axis_eval._version import __version__

if TYPE_CHECKING:
    from axis_eval.config.load import find_config as find_config, load_config as load_config
    from axis_eval.config.models import Config as Config, LoadedConfig as LoadedConfig
    from axis_eval.config.scenario import Scenario as Scenario
    from axis_eval.distributed import DaskExecutor as DaskExecutor
    from axis_eval.errors import (
        AxisError as AxisError,
        ConfigError as ConfigError,
        PreflightError as PreflightError,
        UsageError as UsageError,
    )
    from axis_eval.execute.executor import Executor as Executor, LocalExecutor as LocalExecutor
    from axis_eval.pipeline import (
        RunOptions as RunOptions,
        RunOutcome as RunOutcome,
        run as run,
        run_async as run_async,
    )
    from axis_eval.planning.matrix import Selection as Selection, plan as plan
    from axis_eval.planning.models import JobSpec as JobSpec, Plan as Plan
    from axis_eval.report.models import ReportManifest as ReportManifest, RunResult as RunResult
    from axis_eval.runs.store import list_reports as list_reports, read_report as read_report
    from axis_eval.scaffold import init_project as init_project
    from axis_eval.schemas import schema_for as schema_for

_EXPORTS = {
    "AxisError": "axis_eval.errors",
    "Config": "axis_eval.config.models",
    "ConfigError": "axis_eval.errors",
    "DaskExecutor": "axis_eval.distributed",
    "Executor": "axis_eval.execute.executor",
    "LocalExecutor": "axis_eval.execute.executor",
    "JobSpec": "axis_eval.planning.models",
    "LoadedConfig": "axis_eval.config.models",
    "Plan": "axis_eval.planning.models",
    "PreflightError": "axis_eval.errors",
    "ReportManifest": "axis_eval.report.models",
    "RunOptions": "axis_eval.pipeline",
    "RunOutcome": "axis_eval.pipeline",
    "RunResult": "axis_eval.report.models",
    "Scenario": "axis_eval.config.scenario",
    "Selection": "axis_eval.planning.matrix",
    "UsageError": "axis_eval.errors",
    "find_config": "axis_eval.config.load",
    "init_project": "axis_eval.scaffold",
    "list_reports": "axis_eval.runs.store",
    "load_config": "axis_eval.config.load",
    "plan": "axis_eval.planning.matrix",
    "read_report": "axis_eval.runs.store",
    "run": "axis_eval.pipeline",
    "run_async": "axis_eval.pipeline",
    "schema_for": "axis_eval.schemas",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS, also=("__version__",))
