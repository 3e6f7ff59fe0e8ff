"""The root API is one pinned list, and every name in it resolves."""

from __future__ import annotations

import subprocess
import sys

import axis_eval

EXPECTED = [
    "AxisError",
    "Config",
    "ConfigError",
    "DaskExecutor",
    "Executor",
    "JobSpec",
    "LoadedConfig",
    "LocalExecutor",
    "Plan",
    "PreflightError",
    "ReportManifest",
    "RunOptions",
    "RunOutcome",
    "RunResult",
    "Scenario",
    "Selection",
    "UsageError",
    "__version__",
    "find_config",
    "init_project",
    "list_reports",
    "load_config",
    "plan",
    "read_report",
    "run",
    "run_async",
    "schema_for",
]


def test_all_is_pinned() -> None:
    assert sorted(axis_eval.__all__) == EXPECTED


def test_every_name_resolves() -> None:
    for name in axis_eval.__all__:
        assert getattr(axis_eval, name) is not None, name


def test_unknown_name_raises_attribute_error() -> None:
    try:
        axis_eval.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_lazy() -> None:
    code = (
        "import sys, axis_eval; "
        "mods = ('pydantic', 'yaml', 'rich', 'axis_eval.pipeline'); "
        "heavy = [m for m in mods if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_root_plan_is_the_function_after_stage_imports() -> None:
    import axis_eval.planning.matrix  # the stage package must not shadow the function

    assert callable(axis_eval.plan)
    assert axis_eval.plan.__module__ == "axis_eval.planning.matrix"
