"""A job's isolated folders and environment.

Per job: ``<tmp>/axis-XXXX/{work,home,tmp}``. ``work`` is the agent's workspace; ``home``
is its HOME (a sibling, never the workspace), holding ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``
and ``GEMINI_CLI_HOME``; ``tmp`` is its TMPDIR. The whole folder goes after the job.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from axis_eval.planning.models import JobSpec

PASSTHROUGH = ("PATH", "USER", "SHELL", "LANG", "TERM")
"""System essentials every agent gets from the parent environment."""

AGENT_CONFIG_DIRS = {
    "CLAUDE_CONFIG_DIR": ".claude",
    "CODEX_HOME": ".codex",
    "GEMINI_CLI_HOME": ".gemini",
}


@dataclass(frozen=True)
class JobDirs:
    """The folders of one job."""

    root: Path
    workspace: Path
    home: Path
    tmp: Path

    def remove(self) -> None:
        """Delete everything the job left on disk."""
        shutil.rmtree(self.root, ignore_errors=True)

    def remove_if_empty(self) -> bool:
        """Delete the folders when the job left them empty (four rmdir calls, no walk);
        False when something is left, for :meth:`remove` to deal with."""
        try:
            for folder in (self.workspace, self.home, self.tmp, self.root):
                folder.rmdir()
        except OSError:  # not empty, or no longer a plain folder
            return False
        return True


def create_job_dirs(base: str | None = None) -> JobDirs:
    """Make a fresh ``axis-XXXX/{work,home,tmp}`` under ``base`` (default: the system tmp)."""
    root = Path(tempfile.mkdtemp(prefix="axis-", dir=base))
    dirs = JobDirs(root=root, workspace=root / "work", home=root / "home", tmp=root / "tmp")
    for folder in (dirs.workspace, dirs.home, dirs.tmp):
        folder.mkdir()
    # The agent config folders (AGENT_CONFIG_DIRS) are created by the adapters that use
    # them: three mkdir() calls per job are a measurable share of an instant job's cost.
    return dirs


def allowed_names(spec: JobSpec, adapter_env: Sequence[str]) -> list[str]:
    """Names copied from the parent environment: essentials, config/scenario ``env``, keys."""
    return list(dict.fromkeys([*PASSTHROUGH, *spec.env_pass, *adapter_env]))


def build_env(
    spec: JobSpec,
    dirs: JobDirs,
    parent: Mapping[str, str],
    *,
    adapter_env: Sequence[str] = (),
    isolation: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The job's environment: nothing from the parent but what is allowed by name."""
    env: dict[str, str] = {k: v for k, v in (isolation or {}).items()}
    for name, sub in AGENT_CONFIG_DIRS.items():
        env[name] = str(dirs.home / sub)
    for name in allowed_names(spec, adapter_env):
        if name in parent:
            env[name] = parent[name]
    env.update(spec.env_set)
    env.update(
        {
            "HOME": str(dirs.home),
            "TMPDIR": str(dirs.tmp),
            "AXIS_CONFIG_DIR": spec.config_dir,
            "AXIS_SCENARIO": spec.scenario.key,
            "AXIS_AGENT": spec.agent.adapter,
            "AXIS_AGENT_NAME": spec.agent.name,
            "AXIS_RUN_INDEX": str(spec.run_index),
            "AXIS_RUN_COUNT": str(spec.run_count),
        }
    )
    env.setdefault("PATH", os.defpath)
    return env


def lifecycle_env(spec: JobSpec, job_env: Mapping[str, str]) -> dict[str, str]:
    """Setup/teardown environment: the job's plus ``AXIS_MODEL`` and ``AXIS_VARIANT`` when
    set (the phase runner adds ``AXIS_OUTPUT``, ``AXIS_WORKSPACE`` and ``AXIS_PHASE``)."""
    env = dict(job_env)
    if spec.agent.model:
        env["AXIS_MODEL"] = spec.agent.model
    if spec.scenario.variant:
        env["AXIS_VARIANT"] = spec.scenario.variant
    return env


def missing_env(names: Sequence[str], parent: Mapping[str, str]) -> list[str]:
    """Which of ``names`` are unset or empty in ``parent``."""
    return [n for n in names if not parent.get(n)]
