"""What of the config's ``.axis`` a plan's jobs read on a worker: the git caches.

``axis run``'s pre-flight clones the plan's GitHub skills into
``.axis/skills-cache/<owner>/<repo>`` and the repositories its ``copy`` actions name into
``.axis/repos/<host>/<owner>/<repo>/<ref>`` (config/git_sources.py). A job on a worker finds
them under its copy of the config folder (its spec's ``config_dir`` is rerooted there), so
the bundle carries exactly these folders; reports and every other cache stay behind. The
run's own hooks (``beforeAll``, ``afterAll``) run where ``axis run`` is, so their ``copy``
sources are not the workers' business.
"""

from __future__ import annotations

from pathlib import Path

from axis_eval.adapters.skills import SkillError, github_repo
from axis_eval.config.git_sources import copy_cache_dir, skill_cache_dir
from axis_eval.execute.lifecycle import git_copy_sources
from axis_eval.planning.models import Plan

__all__ = ["plan_caches"]


def plan_caches(plan: Plan, config_dir: str | Path) -> list[Path]:
    """The cache folders the plan's jobs read (GitHub skills, then ``copy`` repositories),
    each once, in the plan's order."""
    root = Path(config_dir)
    found: dict[Path, None] = {}
    for job in plan.jobs:
        for source in job.skills:
            try:
                owner, repo = github_repo(source)
            except SkillError:
                continue  # a local skill folder: in the bundle with the config folder
            found[skill_cache_dir(root, owner, repo)] = None
    actions = [a for j in plan.jobs for a in (*j.scenario.setup, *j.scenario.teardown)]
    for git_source in git_copy_sources(actions):
        found[copy_cache_dir(root, git_source)] = None
    return list(found)
