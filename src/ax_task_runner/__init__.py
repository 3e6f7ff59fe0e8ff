"""ax-task-runner: an AX-compatible task runner (PID 1 in a task container), embeddable.

The public API is loaded lazily so ``ax-task-runner`` can answer ``/healthz`` fast::

    from ax_task_runner import RunnerConfig, parse_task, parse_workspaces, run_async

    task = parse_task(os.environ["AX_TASK_YAML"]).value
    config = RunnerConfig(task=task, on_command_exit=lambda exit: print(exit.exit_code))
    await run_async(config)

This package may import ``axis_eval`` (models, adapters) lazily; ``axis_eval`` never
imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ax_task_runner.config import RunnerConfig as RunnerConfig
    from ax_task_runner.errors import RunnerError as RunnerError, SpecError as SpecError
    from ax_task_runner.runner import Runner as Runner, run as run, run_async as run_async
    from ax_task_runner.server import GuestContext as GuestContext, H2cHandler as H2cHandler
    from ax_task_runner.spec import (
        Task as Task,
        Workspace as Workspace,
        parse_task as parse_task,
        parse_workspaces as parse_workspaces,
    )
    from ax_task_runner.supervisor import CommandExit as CommandExit

_EXPORTS = {
    "CommandExit": "ax_task_runner.supervisor",
    "GuestContext": "ax_task_runner.server",
    "H2cHandler": "ax_task_runner.server",
    "Runner": "ax_task_runner.runner",
    "RunnerConfig": "ax_task_runner.config",
    "RunnerError": "ax_task_runner.errors",
    "SpecError": "ax_task_runner.errors",
    "Task": "ax_task_runner.spec",
    "Workspace": "ax_task_runner.spec",
    "parse_task": "ax_task_runner.spec",
    "parse_workspaces": "ax_task_runner.spec",
    "run": "ax_task_runner.runner",
    "run_async": "ax_task_runner.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ax_task_runner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
