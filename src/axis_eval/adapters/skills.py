"""Skills: folders with a ``SKILL.md``, copied into each agent's native skills location.

Sources are local paths (``./x``, ``../x``, ``/x``), resolved against the config folder
(``AXIS_CONFIG_DIR``), or GitHub repositories (``owner/repo``,
``https://github.com/owner/repo(.git)``), cloned shallow in pre-flight into
``.axis/skills-cache/<owner>/<repo>`` beside the config and reused by later runs
(``axis run --refresh-skills`` clones them afresh, ``--offline`` never fetches). The skill
is the folder holding ``SKILL.md``: the source itself, else its first subfolder (by name,
skipping dot folders and ``node_modules``) that has one. It is installed under the source
folder's name; a GitHub skill as ``<owner>-<repo>``.

Where skills go: Claude Code ``$CLAUDE_CONFIG_DIR/skills/<name>/``; Codex
``$CODEX_HOME/skills/<name>/`` (AXIS used ``<workspace>/.agents/skills``; Codex reads both,
and the config folder keeps the workspace clean); Gemini CLI
``$GEMINI_CLI_HOME/.gemini/skills/<name>/``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from axis_eval._util.git import (
    GitError,
    checkout,
    dropped_message,
    is_checkout,
    remove_checkout,
)
from axis_eval.config.git_sources import GITHUB_SHORTHAND, GITHUB_SKILL_URL, skill_cache_dir
from axis_eval.errors import AxisError

__all__ = [
    "ResolvedSkill",
    "SkillError",
    "check_sources",
    "fetch_skills",
    "github_repo",
    "install_skills",
    "resolve_skill",
]

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
    base = Path(config_dir) if config_dir else Path.cwd()
    if not _is_local(text):
        owner, repo = github_repo(text)
        root = skill_cache_dir(base, owner, repo)
        if not is_checkout(root):
            raise SkillError(
                f"skill {text!r}: not fetched yet ({root})",
                hint="`axis run` clones GitHub skills in pre-flight",
            )
        name = f"{owner}-{repo}"
    else:
        root = (base / text).resolve()
        if not root.is_dir():
            raise SkillError(f"skill {text!r}: folder not found: {root}")
        name = root.name
    folder = _skill_folder(root)
    if folder is None:
        raise SkillError(f'No SKILL.md found in skill "{text}" (looked in {root})')
    return ResolvedSkill(source=text, name=name, folder=folder)


def github_repo(source: str) -> tuple[str, str]:
    """``(owner, repo)`` of a GitHub skill source.

    Raises:
        SkillError: ``source`` is neither a local path nor a GitHub source.
    """
    text = source.strip()
    match = GITHUB_SKILL_URL.match(text) or GITHUB_SHORTHAND.match(text)
    names = (match["owner"], match["repo"]) if match else ()
    if match is None or _is_local(text) or any(n.strip(".") == "" for n in names):
        raise SkillError(
            f"Invalid skill source: {text!r}. Expected a local path (./...), GitHub "
            "shorthand (owner/repo), or GitHub URL."
        )
    return match["owner"], match["repo"]


def fetch_skills(
    sources: Iterable[str],
    config_dir: str,
    *,
    refresh: bool = False,
    offline: bool = False,
    say: Callable[[str], None] | None = None,
) -> None:
    """Clone the GitHub skills among ``sources`` into ``.axis/skills-cache`` (pre-flight):
    a cached one is reused unless ``refresh``; ``offline`` never fetches. ``say`` gets
    ``Cloning skill: <url>`` before a clone, and a warning naming each symlink deleted
    from a clone because it led out of it.

    Raises:
        SkillError: an invalid source, or git failed (the message names the URL and why).
    """
    for source in dict.fromkeys(s.strip() for s in sources):
        if _is_local(source):
            continue
        owner, repo = github_repo(source)
        dest = skill_cache_dir(Path(config_dir), owner, repo)
        url = f"https://github.com/{owner}/{repo}"
        try:
            if refresh and not offline:
                remove_checkout(dest)
            if say is not None and not offline and not is_checkout(dest):
                say(f"Cloning skill: {url}")
            done = checkout(url, dest, offline=offline, update=False)
        except GitError as exc:
            raise SkillError(f"skill {source!r}: {exc.message}", hint=exc.hint) from exc
        except OSError as exc:
            raise SkillError(
                f"skill {source!r}: cannot write its clone {dest}: {exc.strerror or exc}"
            ) from exc
        if say is not None and done.dropped:
            say(f"warning: {dropped_message(url, done.dropped)}")


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
