"""Lifecycle actions (``run_script``, ``copy``) and the ``$AXIS_OUTPUT`` notes file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from axis_eval._util.git import (
    Checkout,
    checkout,
    dropped_message,
    is_checkout,
    remove_checkout,
)
from axis_eval.config.actions import (
    DEFAULT_ACTION_TIMEOUT_MINUTES,
    CopyAction,
    RunScriptAction,
)
from axis_eval.config.git_sources import GitSource, copy_cache_dir, parse_copy_match
from axis_eval.execute.process import run_shell
from axis_eval.execute.sandbox.base import JobSandbox
from axis_eval.planning.select import glob_regex, is_glob

NOTES_CAP_BYTES = 262_144
"""AXIS's cap on a phase's notes (256 KB)."""
_OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class PhaseResult:
    """How a phase went: its error (None when every action succeeded) and its notes."""

    error: str | None
    notes: str | None
    stopped: bool = False
    """``stop`` fired while the phase ran: its remaining actions were skipped."""


def read_notes(path: Path) -> str | None:
    """The notes file's text: capped, trailing whitespace trimmed, None when empty.

    The file sits in the job's folder, which the agent may write: a symlink or anything but
    a regular file there is read as no notes (never followed to a host file), and no more
    than the cap is read, however large it grew.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # missing, or a symlink (ELOOP)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(NOTES_CAP_BYTES + 1)
    finally:
        os.close(fd)
    truncated = len(data) > NOTES_CAP_BYTES
    text = data[:NOTES_CAP_BYTES].decode("utf-8", errors="replace")
    if truncated:
        text += f"\n\n_…truncated at {NOTES_CAP_BYTES} bytes_"
    text = text.rstrip()
    return text or None


async def run_phase(
    actions: Sequence[RunScriptAction | CopyAction],
    *,
    phase: str,
    cwd: Path,
    env: Mapping[str, str],
    copy_root: Path,
    notes: Path,
    marker: str,
    sandbox: JobSandbox,
    grace_s: float = 5.0,
    stop: asyncio.Event | None = None,
) -> PhaseResult:
    """Run actions in order; the first failure stops the phase. Notes are read either way.

    Commands run in the job's ``sandbox``, and ``copy`` actions write through it.

    When ``stop`` fires, the running command is stopped (SIGTERM, ``grace_s``, SIGKILL, with
    every process carrying ``marker``) and the phase ends with ``stopped`` set.
    """
    _fresh_notes(notes)
    full_env = {**env, "AXIS_OUTPUT": str(notes), "AXIS_WORKSPACE": str(cwd), "AXIS_PHASE": phase}
    error: str | None = None
    for action in actions:
        if stop is not None and stop.is_set():
            break
        if isinstance(action, RunScriptAction):
            error = await _run_script(action, cwd, full_env, marker, grace_s, stop, sandbox)
        else:
            error = await _copy(action, copy_root, cwd, sandbox)
        if error:
            break
    stopped = stop is not None and stop.is_set()
    await sandbox.pull(notes)
    result = PhaseResult(error=error, notes=read_notes(notes), stopped=stopped)
    notes.unlink(missing_ok=True)
    return result


def _fresh_notes(path: Path) -> None:
    """An empty notes file of our own: whatever stood at ``path`` (a symlink the agent
    planted for the teardown) is removed, not followed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW
    os.close(os.open(path, flags, 0o644))


async def _run_script(
    action: RunScriptAction,
    cwd: Path,
    env: Mapping[str, str],
    marker: str,
    grace_s: float,
    stop: asyncio.Event | None,
    sandbox: JobSandbox,
) -> str | None:
    minutes = action.timeout_minutes or DEFAULT_ACTION_TIMEOUT_MINUTES
    done = await run_shell(
        action.command,
        cwd=str(cwd),
        env=dict(env),
        marker=marker,
        timeout_s=minutes * 60,
        grace_s=grace_s,
        spawner=sandbox.spawn,
        stop=stop,
    )
    if done.stopped:
        return None  # the phase ends as stopped (its caller sees ``stop``)
    if done.timed_out:
        return f'Lifecycle action timed out after {minutes * 60:g}s: "{action.command}"'
    if done.exit_code != 0:
        output = (done.stderr.strip() or done.stdout.strip())[-_OUTPUT_TAIL:]
        return f'Lifecycle action failed: "{action.command}" exited with code {done.exit_code}' + (
            f"\n{output}" if output else ""
        )
    return None


def _glob_base(pattern: str) -> tuple[str, str | None]:
    """Split a glob into its literal leading folders and the rest."""
    parts = pattern.replace("\\", "/").removeprefix("./").split("/")
    base: list[str] = []
    for i, part in enumerate(parts):
        if is_glob(part):
            return "/".join(base), "/".join(parts[i:])
        base.append(part)
    return "/".join(base), None


def copy_plan(action: CopyAction, root: Path, workspace: Path) -> list[tuple[Path, Path]] | str:
    """What ``action.match`` names (relative to ``root``), as (source, destination) pairs in
    the workspace; the error text when the source does not exist.

    A git ``match`` (``URL#REF:SUB``, config/git_sources.py) names ``SUB`` (default: all)
    of the repository's checkout in ``root/.axis/repos``, which pre-flight fetched
    (:func:`fetch_copy_repos`); its ``.git`` is never copied.
    """
    destination = (workspace / action.destination).resolve()
    if not destination.is_relative_to(workspace.resolve()):  # `..`, `/…` or a symlink
        return (
            f"Lifecycle action failed: copy destination {action.destination!r} leaves the workspace"
        )
    source = parse_copy_match(action.match)
    if source is not None:
        repo = copy_cache_dir(root, source)
        if not is_checkout(repo):
            return f"Lifecycle action failed: copy source not fetched: {source.url} ({repo})"
        top = repo.resolve()
        pairs = _matches(source.sub, repo, destination)
        if isinstance(pairs, str):
            return pairs
        inside = [(s, d) for s, d in pairs if s.is_relative_to(top)]
        if len(inside) < len(pairs):  # a symlink leading out: never followed
            return (
                f"Lifecycle action failed: copy source {action.match} leads out of the "
                f"repository ({top}) through a symlink"
            )
        return [(s, d) for s, d in inside if ".git" not in s.relative_to(top).parts]
    return _matches(action.match, root, destination)


def _matches(match: str, root: Path, destination: Path) -> list[tuple[Path, Path]] | str:
    base_text, rest = _glob_base(match)
    base = (root / base_text).resolve() if base_text else root.resolve()
    if rest is None:
        if not base.exists():
            return f"Lifecycle action failed: copy source does not exist: {base}"
        if base.is_file():
            return [(base, destination / base.name)]
        rest = "**/*"
    if not base.is_dir():
        return []
    rx = glob_regex(rest)
    return [
        (path, destination / path.relative_to(base).as_posix())
        for path in sorted(base.rglob("*"))
        if path.is_file() and not path.is_symlink() and rx.match(path.relative_to(base).as_posix())
    ]


def git_copy_sources(actions: Iterable[RunScriptAction | CopyAction]) -> list[GitSource]:
    """The repositories the ``copy`` actions among ``actions`` copy from, each once."""
    found: dict[tuple[str, str | None], GitSource] = {}
    for action in actions:
        if isinstance(action, CopyAction):
            source = parse_copy_match(action.match)
            if source is not None:
                found.setdefault((source.key, source.ref), source)
    return list(found.values())


def fetch_copy_repos(
    sources: Iterable[GitSource],
    config_dir: Path,
    *,
    refresh: bool = False,
    offline: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[Checkout]:
    """Clone each repository into ``.axis/repos/<host>/<owner>/<repo>/<ref>`` (pre-flight):
    a cached one is reused unless ``refresh``; ``offline`` never fetches. ``say`` gets
    ``Cloning repository: <url>`` before a clone, and a warning naming each symlink
    deleted from a clone because it led out of it.

    Raises:
        GitError: git failed (the message names the URL and why), or offline without a cache.
    """
    done = []
    for source in sources:
        dest = copy_cache_dir(config_dir, source)
        if refresh and not offline:
            remove_checkout(dest)
        if say is not None and not offline and not is_checkout(dest):
            say(f"Cloning repository: {source.url}")
        got = checkout(source.url, dest, ref=source.ref, offline=offline, update=False)
        if say is not None and got.dropped:
            say(f"warning: {dropped_message(source.url, got.dropped)}")
        done.append(got)
    return done


async def _copy(action: CopyAction, root: Path, workspace: Path, sandbox: JobSandbox) -> str | None:
    """Copy what ``action.match`` names into the workspace, through the job's sandbox."""
    plan = copy_plan(action, root, workspace)
    if isinstance(plan, str):
        return plan
    for source, target in plan:
        await sandbox.put_file(source, target)
    return None
