"""Skills: folders with a ``SKILL.md``, copied into each agent's native skills location.

Sources are local paths (``./x``, ``../x``, ``/x``), resolved against the config folder
(``AXIS_CONFIG_DIR``). The skill is the folder holding ``SKILL.md``: the source itself,
else its first subfolder (by name, skipping dot folders and ``node_modules``) that has
one. It is installed under the source folder's name. GitHub sources (``owner/repo``,
``https://github.com/owner/repo``) are recognised but not supported yet.

Where skills go: Claude Code ``$CLAUDE_CONFIG_DIR/skills/<name>/``; Codex
``$CODEX_HOME/skills/<name>/`` (AXIS used ``<workspace>/.agents/skills``; Codex reads both,
and the config folder keeps the workspace clean); Gemini CLI
``$GEMINI_CLI_HOME/.gemini/skills/<name>/``.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from axis_eval.errors import AxisError

__all__ = ["ResolvedSkill", "SkillError", "check_sources", "install_skills", "resolve_skill"]

_GITHUB_URL = re.compile(r"^https?://github\.com/[^/\s]+/[^/\s]+?(\.git)?/?$")
_SHORTHAND = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SKIP = {".git", ".github", "node_modules"}


class SkillError(AxisError):
    """A skill source cannot be used."""


@dataclass(frozen=True)
class ResolvedSkill:
    """A skill ready to copy."""

    source: str
    name: str
    folder: Path
    """The folder holding ``SKILL.md``."""


def _is_local(source: str) -> bool:
    return source.startswith(("./", "../", "/")) or source in (".", "..")


def resolve_skill(source: str, config_dir: str | None) -> ResolvedSkill:
    """Find the skill a source names.

    Raises:
        SkillError: a remote source, an unrecognised source, a missing folder, or no
            ``SKILL.md``.
    """
    text = source.strip()
    if not _is_local(text):
        if _GITHUB_URL.match(text) or _SHORTHAND.match(text):
            raise SkillError(
                f"skill {text!r}: remote skills (GitHub) are not supported yet",
                hint="clone the repository and list its local path (./path/to/skill)",
            )
        raise SkillError(
            f"Invalid skill source: {text!r}. Expected a local path (./...), GitHub "
            "shorthand (owner/repo), or GitHub URL."
        )
    base = Path(config_dir) if config_dir else Path.cwd()
    root = (base / text).resolve()
    if not root.is_dir():
        raise SkillError(f"skill {text!r}: folder not found: {root}")
    folder = _skill_folder(root)
    if folder is None:
        raise SkillError(f'No SKILL.md found in skill "{text}" (looked in {root})')
    return ResolvedSkill(source=text, name=root.name, folder=folder)


def _skill_folder(root: Path) -> Path | None:
    if (root / "SKILL.md").is_file():
        return root
    for child in sorted(root.iterdir(), key=lambda p: p.name):
        if child.name.startswith(".") or child.name == "node_modules" or not child.is_dir():
            continue
        if (child / "SKILL.md").is_file():
            return child
    return None


def check_sources(sources: Iterable[str], config_dir: str | None) -> list[str]:
    """Problems with ``sources``, one message each (empty when all resolve): for pre-flight."""
    problems: list[str] = []
    for source in dict.fromkeys(sources):
        try:
            resolve_skill(source, config_dir)
        except SkillError as exc:
            problems.append(exc.message)
    return problems


def _ignore(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n in _SKIP}


def install_skills(sources: Iterable[str], config_dir: str | None, target: Path) -> list[Path]:
    """Copy every skill into ``target/<name>/``; returns the installed folders.

    Raises:
        SkillError: a source cannot be resolved, or two skills have the same name.
    """
    installed: list[Path] = []
    seen: dict[str, str] = {}
    for source in dict.fromkeys(sources):
        skill = resolve_skill(source, config_dir)
        if skill.name in seen:
            raise SkillError(
                f"skills {seen[skill.name]!r} and {source!r} would both install as {skill.name!r}"
            )
        seen[skill.name] = source
        dest = target / skill.name
        if dest.exists():
            shutil.rmtree(dest)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copytree(skill.folder, dest, ignore=_ignore, symlinks=False)
        installed.append(dest)
    return installed
