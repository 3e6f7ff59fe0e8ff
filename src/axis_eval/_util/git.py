"""A small git layer: shallow clones, fast-forward pulls, pinned refs, the HEAD commit.

Every command runs through :func:`axis_eval._util.processes.run_helper` (its own process
group, a time limit, killed whole) with an environment in which git can never prompt:
``GIT_TERMINAL_PROMPT=0``, no askpass program, ``ssh`` in batch mode, stdin closed. A
failure is a :class:`GitError` whose message names the URL and says, in words, whether the
host could not be reached, it wants credentials, the URL is not a git repository, or the
ref does not exist there.

A checkout made for a pinned ref remembers the ref it was asked for (``.git/axis-ref``),
so offline use can tell a cache of the wanted ref from one of another.

The repositories are untrusted: git may speak only ``https``, ``http``, ``git`` and
``ssh`` (``GIT_ALLOW_PROTOCOL``; ``$AXIS_GIT_ALLOW_PROTOCOL`` replaces the list, e.g.
``file:git`` for local mirrors), no hook or fsmonitor runs, and every symlink in a
checkout whose target leaves it (or points into its ``.git``) is deleted, never followed
(:attr:`Checkout.dropped` names them); a tree more than :data:`MAX_TREE_DEPTH` folders
deep is refused. Two runs sharing a cache take turns (a lock file
beside each checkout).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from axis_eval._util import git_tree
from axis_eval._util.processes import Completed, HelperTimeout, run_helper
from axis_eval.errors import AxisError

__all__ = [
    "ALLOWED_PROTOCOLS",
    "CLONE_TIMEOUT_S",
    "MAX_TREE_DEPTH",
    "PULL_TIMEOUT_S",
    "Checkout",
    "GitError",
    "checkout",
    "dropped_message",
    "git_env",
    "head_commit",
    "is_checkout",
    "remove_checkout",
]

CLONE_TIMEOUT_S = 60.0
"""AXIS's limit for a clone."""
PULL_TIMEOUT_S = 30.0
"""AXIS's limit for a pull."""
ALLOWED_PROTOCOLS = "https:http:git:ssh"
"""What git may speak (``GIT_ALLOW_PROTOCOL``) unless ``$AXIS_GIT_ALLOW_PROTOCOL`` says."""
MAX_TREE_DEPTH = 100
"""The deepest folder nesting a checkout may have (Python's walks and copies recurse)."""
_REF_FILE = "axis-ref"
_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


class GitError(AxisError):
    """A git command failed; ``kind`` says why (``unreachable``, ``auth``, ``not-a-repo``,
    ``unknown-ref``, ``protocol``, ``too-deep``, ``timeout``, ``no-git``, ``offline``,
    ``failed``)."""

    exit_code = 2

    def __init__(self, message: str, *, kind: str, url: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind
        self.url = url


@dataclass(frozen=True)
class Checkout:
    """A working tree at a known commit."""

    url: str
    ref: str | None
    path: Path
    commit: str
    dropped: tuple[str, ...] = ()
    """Symlinks deleted from the checkout because they led out of it (paths in it)."""


def git_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with every way to prompt closed."""
    env = dict(os.environ if base is None else base)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_ASKPASS"] = ""
    env["SSH_ASKPASS"] = ""
    env.pop("DISPLAY", None)  # ssh's askpass needs one
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=20")
    env["GCM_INTERACTIVE"] = "never"  # Git Credential Manager, where installed
    env["LC_ALL"] = "C"  # git's messages in English: they are classified below
    env["GIT_ALLOW_PROTOCOL"] = env.get("AXIS_GIT_ALLOW_PROTOCOL") or ALLOWED_PROTOCOLS
    return env


_UNREACHABLE = (
    "could not resolve host",
    "couldn't resolve host",
    "connection refused",
    "failed to connect",
    "unable to connect",
    "unable to look up",
    "network is unreachable",
    "no route to host",
    "connection timed out",
    "operation timed out",
    "timed out",
    "could not read from remote repository",
    "connection reset",
    "name or service not known",
    "temporary failure in name resolution",
)
_AUTH = (
    "authentication failed",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "permission denied (publickey",
    "access denied",
    "http basic: access denied",
    "requested url returned error: 401",
    "requested url returned error: 403",
    "host key verification failed",
)
_NOT_REPO = (
    "does not appear to be a git repository",
    "not a git repository",
    "repository not found",
    "no such repository",
    "not found",
    "requested url returned error: 404",
    "not valid: is this a git repository",
    "no such file or directory",
)
_UNKNOWN_REF = (
    "couldn't find remote ref",
    "remote branch",
    "not our ref",
    "unadvertised object",
    "no such remote ref",
    "invalid refspec",
    "is not a commit",
)


def _classify(stderr: str, ref: str | None) -> tuple[str, str]:
    """``(kind, reason in words)`` from git's stderr."""
    low = stderr.lower()
    if "transport '" in low and "not allowed" in low:
        return "protocol", "its protocol is not allowed (https, http, git and ssh are)"
    if ref is not None and any(m in low for m in _UNKNOWN_REF):
        return "unknown-ref", f"ref {ref!r} was not found there"
    if any(m in low for m in _AUTH):
        return "auth", "the host asks for credentials (authentication required)"
    if any(m in low for m in _UNREACHABLE):
        return "unreachable", "the host cannot be reached"
    if any(m in low for m in _NOT_REPO):
        return "not-a-repo", "it is not a git repository (or it does not exist)"
    return "failed", "git failed"


_HINTS = {
    "unreachable": "check the URL and the network (or use the cache: `axis run --offline`)",
    "auth": "git never prompts here: set up a credential helper or SSH key that works "
    "without a prompt, or use a public URL",
    "not-a-repo": "check the URL: it must name a git repository",
    "unknown-ref": "check the branch, tag or commit after `#`",
    "protocol": "AXIS_GIT_ALLOW_PROTOCOL=<list, e.g. https:ssh:file> widens the list "
    "(git's insteadOf may have rewritten the URL)",
}


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])


def _git(
    args: list[str], url: str, *, cwd: Path | None, timeout_s: float, ref: str | None = None
) -> Completed:
    """Run ``git ARGS``; a non-zero exit or a timeout is a :class:`GitError` naming ``url``."""
    argv = ["git", "-c", "core.askPass=", "-c", "credential.interactive=never"]
    argv += ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    argv += ["-c", "submodule.recurse=false", *args]
    try:
        done = run_helper(
            argv,
            cwd=str(cwd) if cwd else None,
            env=git_env(),
            timeout_s=timeout_s,
            max_output_bytes=1 << 20,
            stop_on_signals=True,
        )
    except HelperTimeout as exc:
        raise GitError(
            f"git {args[0]} {url}: no answer within {timeout_s:g}s (stopped)",
            kind="timeout",
            url=url,
            hint=_HINTS["unreachable"],
        ) from exc
    except FileNotFoundError as exc:
        raise GitError(
            f"git is not installed: it is needed for {url}",
            kind="no-git",
            url=url,
            hint="install git (apt-get install git)",
        ) from exc
    if done.returncode != 0:
        kind, reason = _classify(done.stderr, ref)
        detail = _last_lines(done.stderr)
        raise GitError(
            f"git {args[0]} {url}: {reason}" + (f" (git: {detail})" if detail else ""),
            kind=kind,
            url=url,
            hint=_HINTS.get(kind),
        )
    return done


def is_checkout(path: Path) -> bool:
    """Whether ``path`` holds a git working tree of ours (``.git/HEAD`` exists)."""
    return (path / ".git" / "HEAD").is_file()


def head_commit(path: Path, url: str = "") -> str:
    """The full commit id of ``path``'s HEAD."""
    done = _git(["rev-parse", "HEAD"], url or str(path), cwd=path, timeout_s=PULL_TIMEOUT_S)
    return done.stdout.strip()


def _cached_ref(path: Path) -> str | None:
    try:
        return (path / ".git" / _REF_FILE).read_text().strip() or None
    except OSError:
        return None


def _remember_ref(path: Path, ref: str | None) -> None:
    marker = path / ".git" / _REF_FILE
    if ref is None:
        marker.unlink(missing_ok=True)
    else:
        marker.write_text(ref + "\n")


def checkout(
    url: str,
    dest: Path,
    *,
    ref: str | None = None,
    offline: bool = False,
    update: bool = True,
    clone_timeout_s: float = CLONE_TIMEOUT_S,
    pull_timeout_s: float = PULL_TIMEOUT_S,
) -> Checkout:
    """``url`` at ``ref`` (None: the default branch) in ``dest``, made or brought up to date.

    No checkout yet: a shallow clone (``--depth 1``; ``--single-branch`` without a ref).
    A checkout: with ``update``, the default branch is pulled fast-forward (a history that
    cannot fast-forward is cloned afresh: the folder is a cache), a pinned ref fetched and
    checked out (a commit already checked out is not fetched again); without ``update`` it
    is used as it is. ``offline``: never contact the remote; the checkout must exist and be
    of ``ref``.

    Raises:
        GitError: git failed (the message names ``url`` and says why), or offline without
            a usable checkout.
    """
    if offline:
        return _confined(_offline(url, dest, ref))
    with _locked(dest, url, clone_timeout_s + pull_timeout_s):
        done = _checkout(url, dest, ref, update, clone_timeout_s, pull_timeout_s)
        return _confined(done)


def _checkout(
    url: str,
    dest: Path,
    ref: str | None,
    update: bool,
    clone_timeout_s: float,
    pull_timeout_s: float,
) -> Checkout:
    if is_checkout(dest) and _cached_ref(dest) == ref:
        if not update:
            return Checkout(url, ref, dest, head_commit(dest, url))
        if ref is None:
            try:
                _git(["pull", "--ff-only", "--quiet"], url, cwd=dest, timeout_s=pull_timeout_s)
                return Checkout(url, ref, dest, head_commit(dest, url))
            except GitError as exc:
                if exc.kind != "failed":  # the network or the remote said no
                    raise
        else:
            if _SHA.match(ref) and head_commit(dest, url).startswith(ref.lower()):
                return Checkout(url, ref, dest, head_commit(dest, url))
            _fetch_ref(url, dest, ref, pull_timeout_s)
            return Checkout(url, ref, dest, head_commit(dest, url))
    return _fresh(url, dest, ref, clone_timeout_s)


@contextlib.contextmanager
def _locked(dest: Path, url: str, wait_s: float) -> Iterator[None]:
    """One clone or pull of ``dest`` at a time, across runs."""
    try:
        with git_tree.locked(dest.parent / f".{dest.name}.axis-lock", wait_s):
            yield
    except git_tree.LockTimeout:
        raise GitError(
            f"{url}: another run kept its cache ({dest}) locked for {wait_s:g}s",
            kind="timeout",
            url=url,
        ) from None


def _confined(done: Checkout) -> Checkout:
    """``done`` with every symlink leading out of it (or into its ``.git``) deleted; a
    tree deeper than :data:`MAX_TREE_DEPTH` is removed and refused."""
    try:
        dropped = git_tree.drop_outside_links(done.path, MAX_TREE_DEPTH)
    except git_tree.TooDeep as exc:
        git_tree.discard(done.path)  # a cache no run can use
        raise GitError(
            f"{done.url}: the repository's tree is more than {MAX_TREE_DEPTH} folders "
            f"deep ({exc.folder[:120]}…): refused",
            kind="too-deep",
            url=done.url,
            hint="AXIS copies and walks a repository's files; one this deep is refused",
        ) from None
    if not dropped:
        return done
    return Checkout(done.url, done.ref, done.path, done.commit, dropped)


def dropped_message(url: str, dropped: tuple[str, ...]) -> str:
    """The warning for symlinks deleted from ``url``'s checkout."""
    shown = ", ".join(dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    return f"{url}: symlink(s) leading out of the repository were deleted, not followed: {shown}"


def _offline(url: str, dest: Path, ref: str | None) -> Checkout:
    if not is_checkout(dest):
        raise GitError(
            f"{url}: not in the cache ({dest}) and --offline forbids fetching it",
            kind="offline",
            url=url,
            hint="run once without --offline to fill the cache",
        )
    cached = _cached_ref(dest)
    if cached != ref:
        held = f"ref {cached!r}" if cached else "the default branch"
        wanted = f"ref {ref!r}" if ref else "the default branch"
        raise GitError(
            f"{url}: the cache ({dest}) holds {held}, not {wanted}, and --offline forbids "
            "fetching it",
            kind="offline",
            url=url,
            hint="run once without --offline to fill the cache",
        )
    return Checkout(url, ref, dest, head_commit(dest, url))


def _fresh(url: str, dest: Path, ref: str | None, timeout_s: float) -> Checkout:
    """Clone into a sibling folder, then put it in place: a failed clone leaves no half."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.with_name(f".{dest.name}.axis-clone-{os.getpid()}")
    git_tree.discard(staging)
    try:
        if ref is None:
            _git(
                ["clone", "--depth", "1", "--single-branch", "--quiet", "--", url, str(staging)],
                url,
                cwd=None,
                timeout_s=timeout_s,
            )
        else:
            staging.mkdir(parents=True)
            _git(["init", "--quiet"], url, cwd=staging, timeout_s=timeout_s)
            _git(["remote", "add", "origin", url], url, cwd=staging, timeout_s=timeout_s)
            _fetch_ref(url, staging, ref, timeout_s)
        _remember_ref(staging, ref)
        if dest.exists() or dest.is_symlink():
            git_tree.remove(dest)
        staging.rename(dest)
    finally:
        git_tree.discard(staging)
    return Checkout(url, ref, dest, head_commit(dest, url))


def _fetch_ref(url: str, dest: Path, ref: str, timeout_s: float) -> None:
    if ref.startswith("-"):
        raise GitError(
            f"{url}: ref {ref!r} was not found there", kind="unknown-ref", url=url, hint=None
        )
    try:
        _git(
            ["fetch", "--depth", "1", "--quiet", "origin", ref],
            url,
            cwd=dest,
            timeout_s=timeout_s,
            ref=ref,
        )
    except GitError as exc:
        if exc.kind == "unknown-ref" and _SHA.match(ref) and len(ref) < 40:
            exc.hint = "git fetches a commit only by its full id (40 hex digits)"
        raise
    _git(
        ["checkout", "--quiet", "--force", "--detach", "FETCH_HEAD"],
        url,
        cwd=dest,
        timeout_s=timeout_s,
    )
    _remember_ref(dest, ref)


def remove_checkout(path: Path) -> None:
    """Delete a cached checkout (``--refresh-skills``, ``--refresh-repos``)."""
    if path.exists() or path.is_symlink():
        git_tree.remove(path)
