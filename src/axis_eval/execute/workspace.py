"""A job's isolated folders and environment.

Per job: ``<tmp>/axis-XXXX/{work,home,tmp}``. ``work`` is the agent's workspace; ``home``
is its HOME (a sibling, never the workspace), holding ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``
and ``GEMINI_CLI_HOME``; ``tmp`` is its TMPDIR. The whole folder goes after the job.
"""

from __future__ import annotations

import itertools
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
    """The folders of one job, as strings (they go into the environment and the argv; a
    Path per folder per job was a measurable share of an instant job's cost)."""

    root_dir: str
    work_dir: str
    home_dir: str
    tmp_dir: str

    @classmethod
    def under(cls, root: str | Path, workspace: str | Path | None = None) -> JobDirs:
        """The folders of the job rooted at ``root`` (the workspace defaults to ``work``)."""
        base = os.fspath(root)
        work = os.fspath(workspace) if workspace is not None else f"{base}/work"
        return cls(base, work, f"{base}/home", f"{base}/tmp")

    @property
    def root(self) -> Path:
        """The job's folder (holds the other three and the setup/teardown notes)."""
        return Path(self.root_dir)

    @property
    def workspace(self) -> Path:
        """The agent's working directory."""
        return Path(self.work_dir)

    @property
    def home(self) -> Path:
        """The agent's HOME."""
        return Path(self.home_dir)

    @property
    def tmp(self) -> Path:
        """The agent's TMPDIR."""
        return Path(self.tmp_dir)

    def remove(self) -> None:
        """Delete everything the job left on disk."""
        shutil.rmtree(self.root_dir, ignore_errors=True)

    def remove_if_empty(self) -> bool:
        """Delete the folders when the job left them empty (four rmdir calls, no walk);
        False when something is left, for :meth:`remove` to deal with."""
        try:
            for folder in (self.work_dir, self.home_dir, self.tmp_dir, self.root_dir):
                os.rmdir(folder)  # noqa: PTH106 -- strings: no Path per folder per job
        except OSError:  # not empty, or no longer a plain folder
            return False
        return True


_serial = itertools.count()


def create_job_dirs(base: str | None = None) -> JobDirs:
    """Make a fresh, private ``axis-<pid>-<n>/{work,home,tmp}`` under ``base`` (default: the
    system tmp).

    Like ``tempfile.mkdtemp`` (mode 0700, never an existing folder: mkdir() fails on any
    name that exists, a symlink included, and the next number is tried) without drawing a
    random name per job.
    """
    parent = base if base is not None else tempfile.gettempdir()
    prefix = f"{os.path.abspath(parent)}/axis-{os.getpid()}-"
    while True:
        root = f"{prefix}{next(_serial)}"
        try:
            os.mkdir(root, 0o700)  # noqa: PTH102 -- as above
            break
        except FileExistsError:  # left by an earlier process with our pid
            continue
    dirs = JobDirs.under(root)
    for folder in (dirs.work_dir, dirs.home_dir, dirs.tmp_dir):
        os.mkdir(folder)  # noqa: PTH102 -- as above
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
        env[name] = f"{dirs.home_dir}/{sub}"
    for name in allowed_names(spec, adapter_env):
        if name in parent:
            env[name] = parent[name]
    env.update(spec.env_set)
    env.update(
        {
            "HOME": dirs.home_dir,
            "TMPDIR": dirs.tmp_dir,
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
