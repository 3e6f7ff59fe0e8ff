"""``spec.git`` with real git: upstream's init / remote / fetch / checkout sequence.

Decisions are per repository, never per workspace: a destination that already holds a
finished checkout is never checked out again, so a retry after a partial failure (or a
boot that lost its markers) cannot destroy an agent's edits. Every git call goes through
:func:`ax_task_runner.supervisor.run_helper`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ax_task_runner.files import write_atomic
from ax_task_runner.logs import event, redactor
from ax_task_runner.spec import GitRepo
from ax_task_runner.supervisor import HelperResult, SpawnError, run_helper

__all__ = ["CHECKOUT_MARKER", "GitFetcher", "GitOutcome", "destination", "repo_basename"]

log = logging.getLogger(__name__)

CHECKOUT_MARKER = "ax-task-runner-checkout"
"""Written inside ``<dest>/.git`` once ``checkout`` succeeded (it travels with the repo)."""
DEFAULT_BRANCH = "main"


def repo_basename(url: str) -> str:
    """``https://host/org/chalk.git`` → ``chalk`` (text after the last ``/`` or ``:``)."""
    text = url.strip().rstrip("/")
    text = text.removesuffix(".git")
    cut = max(text.rfind("/"), text.rfind(":"))
    return text[cut + 1 :]


def destination(repo: GitRepo, workspace: str) -> str:
    """Where a repository goes: ``dir`` (``.`` = the workspace, absolute as is, else under
    the workspace), else ``<workspace>/<name>``; a name of ``""``, ``origin`` or ``repo``
    is replaced by the URL's basename."""
    if repo.dir:
        if repo.dir == ".":
            return workspace
        return os.path.normpath(os.path.join(workspace, repo.dir))
    name = repo.name.strip()
    if name in ("", "origin", "repo"):
        name = repo_basename(repo.repo) or "repo"
    return os.path.normpath(os.path.join(workspace, name))


@dataclass(frozen=True)
class GitOutcome:
    """What happened to one repository."""

    dest: str
    status: Literal["cloned", "kept", "failed"]
    """``kept``: a finished checkout was already there and was left alone."""
    output: str = ""
    error: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _clear_stale_locks(git_dir: Path) -> None:
    """Remove ``*.lock`` files a killed git left behind (nothing else runs git here)."""
    for root, dirs, files in os.walk(git_dir):
        dirs[:] = [d for d in dirs if d != "objects"]
        for name in files:
            if name.endswith(".lock"):
                try:
                    os.unlink(os.path.join(root, name))
                except OSError:
                    pass


class GitFetcher:
    """Fetches repositories with up to ``attempts`` tries, ``delay_s`` apart."""

    def __init__(
        self, *, env: dict[str, str], state_dir: str, attempts: int = 5, delay_s: float = 2.0
    ) -> None:
        self.env = {**env, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"}
        self.state_dir = Path(state_dir)
        self.attempts = max(attempts, 1)
        self.delay_s = delay_s

    async def _git(self, args: list[str], cwd: str) -> HelperResult:
        argv = ["git", "-c", f"safe.directory={cwd}", *args]
        return await run_helper(argv, cwd=cwd, env=self.env)

    async def finished(self, dest: str) -> bool:
        """Whether ``dest`` holds a finished checkout (our marker, or a HEAD commit)."""
        git_dir = Path(dest) / ".git"
        if (git_dir / CHECKOUT_MARKER).is_file():
            return True
        if not git_dir.exists():
            return False
        done = await self._git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], dest)
        return done.returncode == 0

    async def fetch(self, repo: GitRepo, dest: str) -> GitOutcome:
        """Bring ``repo`` into ``dest`` unless a finished checkout is already there."""
        url = repo.repo.strip()
        branch = repo.branch.strip() or DEFAULT_BRANCH
        shown = redactor(url)
        try:
            Path(dest).mkdir(parents=True, exist_ok=True)
            if await self.finished(dest):
                event(
                    log,
                    logging.INFO,
                    "repository already checked out; leaving it alone",
                    repo=shown,
                    dest=dest,
                )
                self._mark(dest, shown, branch)
                return GitOutcome(dest, "kept")
        except (OSError, SpawnError) as exc:
            return self._failed(dest, shown, str(exc), "")
        error, output = "", ""
        for attempt in range(1, self.attempts + 1):
            error, output = await self._attempt(url, branch, repo.depth, dest)
            if not error:
                self._mark(dest, shown, branch)
                self._write_log("git-success.log", output)
                event(
                    log,
                    logging.INFO,
                    "fetched repository",
                    repo=shown,
                    branch=branch,
                    dest=dest,
                    attempt=attempt,
                )
                return GitOutcome(dest, "cloned", output)
            event(
                log,
                logging.WARNING,
                "git fetch failed",
                repo=shown,
                dest=dest,
                attempt=f"{attempt}/{self.attempts}",
                error=error,
            )
            if error.startswith("git is not installed"):
                break
            if attempt < self.attempts:
                await asyncio.sleep(self.delay_s)
        return self._failed(dest, shown, error, output)

    async def _attempt(self, url: str, branch: str, depth: int, dest: str) -> tuple[str, str]:
        """One pass of the sequence; returns ``(error or "", combined output)``."""
        _clear_stale_locks(Path(dest) / ".git")
        fetch = ["fetch", *([f"--depth={depth}"] if depth > 0 else []), "origin", branch]
        steps = [
            ["-c", "init.defaultBranch=main", "init"],
            ["remote", "add", "origin", url],
            fetch,
            ["-c", "advice.detachedHead=false", "checkout", "-f", "FETCH_HEAD"],
        ]
        output: list[str] = []
        for args in steps:
            try:
                done = await self._git(args, dest)
                if done.returncode != 0 and args[:2] == ["remote", "add"]:
                    output.append(done.output)
                    args = ["remote", "set-url", "origin", url]
                    done = await self._git(args, dest)
            except SpawnError as exc:
                return f"git is not installed or cannot run: {exc}", "".join(output)
            except OSError as exc:
                return f"cannot run git: {exc}", "".join(output)
            output.append(done.output)
            if done.returncode != 0:
                verb = next(a for a in args if not a.startswith("-") and "=" not in a)
                return f"git {verb} exited with status {done.returncode}", "".join(output)
        return "", "".join(output)

    def _mark(self, dest: str, shown: str, branch: str) -> None:
        git_dir = Path(dest) / ".git"
        if git_dir.is_dir() and not (git_dir / CHECKOUT_MARKER).exists():
            text = f"repo: {shown}\nbranch: {branch}\ncheckedOutAt: {_now()}\n"
            try:
                write_atomic(git_dir / CHECKOUT_MARKER, text, durable=True)
            except OSError as exc:
                event(
                    log, logging.WARNING, "cannot write checkout marker", dest=dest, error=str(exc)
                )

    def _failed(self, dest: str, shown: str, error: str, output: str) -> GitOutcome:
        self._write_log("git-error.log", f"error: {error}\noutput: {output}")
        event(log, logging.ERROR, "git fetch gave up", repo=shown, dest=dest, error=error)
        return GitOutcome(dest, "failed", output, error)

    def _write_log(self, name: str, text: str) -> None:
        """``/ax/git-success.log`` / ``git-error.log``: the last repository's output."""
        try:
            write_atomic(self.state_dir / name, redactor(text))
        except OSError:
            pass
