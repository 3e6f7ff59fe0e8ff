"""The run-level hooks: ``beforeAll`` before the first job, ``afterAll`` after the last.

They run in the config's folder with a small environment (the pass-through variables,
``TMPDIR`` and the config's ``env``), never the agents' secrets; ``afterAll`` also learns
where the report is and how the run went.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from axis_eval.config.models import LoadedConfig
from axis_eval.execute.lifecycle import run_phase
from axis_eval.execute.sandbox.host import HostSandbox
from axis_eval.execute.workspace import PASSTHROUGH
from axis_eval.pipeline.options import RunAborted
from axis_eval.progress import Display
from axis_eval.report.models import ReportManifest


def hook_env(environ: Mapping[str, str], loaded: LoadedConfig) -> dict[str, str]:
    """The environment both hooks start from."""
    names = [*PASSTHROUGH, "TMPDIR", *loaded.config.env]
    return {n: environ[n] for n in names if n in environ}


async def before_all(
    loaded: LoadedConfig, env: dict[str, str], token: str, display: Display
) -> str | None:
    """Run ``beforeAll``; returns the notes it wrote.

    Raises:
        RunAborted: it failed (nothing has run, no report is started).
    """
    error, notes = await run_hook(loaded, "beforeAll", env, token)
    if notes:
        display.message(f"beforeAll notes:\n{notes}")
    if error:
        raise RunAborted(f"beforeAll failed: {error}")
    return notes


def after_all_env(env: dict[str, str], folder: Path, manifest: ReportManifest) -> dict[str, str]:
    """``afterAll``'s environment: the hooks' plus where the report is and its counts."""
    s = manifest.summary
    return {
        **env,
        "AXIS_REPORT_DIR": str(folder),
        "AXIS_TOTAL": str(s.total),
        "AXIS_COMPLETED": str(s.completed),
        "AXIS_FAILED": str(s.failed),
        "AXIS_DURATION_MS": str(manifest.duration_ms),
    }


async def run_hook(
    loaded: LoadedConfig, which: str, env: dict[str, str], token: str
) -> tuple[str | None, str | None]:
    """Run one hook's actions; returns (error, notes), both None when it has none."""
    actions = loaded.config.before_all if which == "beforeAll" else loaded.config.after_all
    if not actions:
        return None, None
    folder = Path(loaded.config_dir)
    notes = Path(env.get("TMPDIR", "/tmp")) / f"axis-{which}-{os.getpid()}-{time.time_ns()}.md"
    result = await run_phase(
        actions,
        phase=which,
        cwd=folder,
        env=env,
        copy_root=folder,
        notes=notes,
        marker=f"{token}/{which}",
        # Run-level hooks are the project's own commands, on the host (services they start
        # serve every job; the run's end stops them by their marker).
        sandbox=HostSandbox(f"{token}/{which}"),
    )
    return result.error, result.notes
