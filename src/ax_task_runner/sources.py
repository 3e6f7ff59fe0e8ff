"""Where the console script's config comes from: spec files or variables, flags, env.

:func:`config_from_sources` reads ``--task-file``/``--workspace-file`` (else
``AX_TASK_YAML``/``AX_WORKSPACES_YAML``) and merges flags over option variables;
:func:`main_from_cli` is everything ``ax-task-runner`` does after argparse.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

from ax_task_runner.config import RunnerConfig
from ax_task_runner.errors import RunnerError
from ax_task_runner.logs import event
from ax_task_runner.runner import run_async

__all__ = ["config_from_sources", "main_from_cli"]

log = logging.getLogger(__name__)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RunnerError(f"cannot read {path}: {exc.strerror or exc}") from exc


def config_from_sources(
    options: Mapping[str, Any],
    task_file: str | None,
    workspace_files: list[str],
    environ: Mapping[str, str],
) -> RunnerConfig:
    """Build the config the console script runs: files over env, flags over variables.

    Raises:
        RunnerError: a file cannot be read, a spec is malformed (SpecError), or an option
            has an invalid value.
    """
    from pydantic import ValidationError

    from ax_task_runner.config import options_from_env
    from ax_task_runner.spec import Task, Workspace, parse_task, parse_workspaces

    warnings: list[str] = []
    task: Task | None = None
    text = _read(task_file) if task_file else environ.get("AX_TASK_YAML", "")
    if text.strip():
        parsed = parse_task(text, source=task_file or "AX_TASK_YAML")
        task, warnings = parsed.value, warnings + parsed.warnings
    workspaces: list[Workspace] = []
    sources = [(f, _read(f)) for f in workspace_files] or [
        ("AX_WORKSPACES_YAML", environ.get("AX_WORKSPACES_YAML", ""))
    ]
    for source, body in sources:
        if body.strip():
            found = parse_workspaces(body, source=source)
            workspaces += found.value
            warnings += found.warnings
    values, env_warnings = options_from_env(environ)
    values.update({k: v for k, v in options.items() if v is not None})
    for warning in warnings + env_warnings:
        event(log, logging.WARNING, warning)
    try:
        return RunnerConfig.model_validate({**values, "task": task, "workspaces": workspaces})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise RunnerError(f"invalid option: {problems}") from None


def main_from_cli(
    options: Mapping[str, Any], task_file: str | None, workspace_files: list[str]
) -> int:
    """What ``ax-task-runner`` does after parsing its flags; the exit code."""
    from ax_task_runner.entry import run_entry

    def start() -> Coroutine[Any, Any, int]:
        return run_async(config_from_sources(options, task_file, workspace_files, os.environ))

    return run_entry(start, log)
