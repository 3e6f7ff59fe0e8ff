"""Scenarios from a remote source may not name host files by path.

A remote's scenarios are read like the config's own (their relative ``copy`` matches and
local skills resolve against the config folder, as AXIS does), but the harness copies those
files itself, outside every sandbox: a remote scenario that could ``copy`` an absolute
path, or climb out of the config folder with ``..``, would hand the agent any file the
harness can read (``~/.ssh/id_rsa``). So a scenario whose file lies in a remote's clone
may use only relative paths that stay inside the config folder, and git sources.
"""

import os
from collections.abc import Sequence
from pathlib import Path

from axis_eval.config.actions import CopyAction
from axis_eval.config.git_sources import ResolvedRemote, parse_copy_match
from axis_eval.config.scenario import Scenario
from axis_eval.errors import ConfigError

__all__ = ["check_remote_paths"]


def _remote_of(scenario: Scenario, remotes: Sequence[ResolvedRemote]) -> ResolvedRemote | None:
    if not scenario.source:
        return None
    source = os.path.abspath(scenario.source)
    for remote in remotes:
        root = os.path.abspath(remote.path).rstrip("/")
        if source == root or source.startswith(root + "/"):
            return remote
    return None


def _leaves(path: str) -> bool:
    """An absolute path, ``~``, or one that climbs out of the folder it is relative to."""
    if path.startswith(("/", "~")):
        return True
    return Path(os.path.normpath(path)).parts[:1] == ("..",)


def check_remote_paths(scenarios: Sequence[Scenario], remotes: Sequence[ResolvedRemote]) -> None:
    """Refuse a remote scenario's ``copy`` match or local skill that names a path outside
    the config folder.

    Raises:
        ConfigError: naming the scenario, its remote and the path.
    """
    if not remotes:
        return
    for scenario in scenarios:
        remote = _remote_of(scenario, remotes)
        if remote is None:
            continue
        where = f"scenario {scenario.key!r} (from the remote {remote.url})"
        for phase, actions in (("setup", scenario.setup), ("teardown", scenario.teardown)):
            for action in actions:
                if not isinstance(action, CopyAction) or parse_copy_match(action.match):
                    continue
                if _leaves(action.match):
                    raise ConfigError(
                        f"{where}: {phase} copy match {action.match!r} leaves the config "
                        "folder; a remote scenario may copy only relative paths inside it, "
                        "or from a git URL",
                        file=scenario.source,
                    )
        for skill in scenario.skills:
            if skill.startswith(("./", "../", "/", "~")) and _leaves(skill):
                raise ConfigError(
                    f"{where}: skill {skill!r} leaves the config folder; a remote scenario "
                    "may name only skills inside it, or GitHub skills",
                    file=scenario.source,
                )
