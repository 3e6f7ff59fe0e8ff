"""File descriptors: this process's limit, what a running job holds, and EMFILE.

Every running job holds descriptors in this process: its agent's stdout and stderr pipes
(and stdin, when fed or conversing), the pidfd asyncio watches it through, a socket or two
of the scripted model server, and for a moment the pipes of the spawn itself. With
``ulimit -n 512`` and ``--concurrency 300`` the spawns fail with "Too many open files", so
the local executor fits its concurrency to the limit (:func:`fit_concurrency`): the soft
limit is raised as far as the requested concurrency needs (never past the hard limit, and
no further than needed: agents inherit it), and the concurrency lowered to what fits.
A spawn that still meets EMFILE waits for descriptors to free up (:data:`EXHAUSTED_WAIT_S`).
"""

from __future__ import annotations

import errno
import os
import resource

__all__ = [
    "EXHAUSTED_WAIT_S",
    "FDS_PER_JOB",
    "RESERVED_FDS",
    "devnull",
    "exhausted",
    "fit_concurrency",
    "open_fds",
    "raise_soft_limit",
]

FDS_PER_JOB = 8
"""Descriptors one running job may hold. Measured: 3 for an agent with stdin from
/dev/null (stdout, stderr, pidfd), 4 with a stdin pipe; plus up to 2 sockets of the
scripted model server, and room for a shell command (a check, a teardown) beside it."""
RESERVED_FDS = 32
"""Kept free beside the jobs: the spawn in progress (up to 7 pipe ends at once), the
sentinel's pipes, the report's files, the event loop's own, an API judge's connection."""
EXHAUSTED_WAIT_S = 60.0
"""How long a spawn that meets EMFILE (or ENFILE) waits for descriptors before failing."""


def open_fds() -> int:
    """How many descriptors this process has open now."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor
    except OSError:
        return 0


def raise_soft_limit(wanted: int) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to ``wanted`` (at most the hard limit); never lower
    it. Returns the soft limit in force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or wanted <= soft:
        return wanted if soft == resource.RLIM_INFINITY else soft
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # not allowed here (a sandbox, a seccomp filter)
        return soft
    return target


def fit_concurrency(requested: int, per_job: int = FDS_PER_JOB) -> tuple[int, str | None]:
    """The concurrency this process's descriptor limit allows, at most ``requested``, and a
    line for the user when it is lower (None when it is not). Raises the soft limit first
    (:func:`raise_soft_limit`) as far as ``requested`` jobs need."""
    in_use = open_fds()
    wanted = in_use + RESERVED_FDS + requested * per_job
    limit = raise_soft_limit(wanted)
    fits = max(1, (limit - in_use - RESERVED_FDS) // per_job)
    if fits >= requested:
        return requested, None
    return fits, (
        f"concurrency lowered from {requested} to {fits}: this process may open {limit} "
        f"files (ulimit -n) and {requested} jobs at once need about {wanted}; "
        "raise the limit to run more at once"
    )


def exhausted(exc: BaseException) -> bool:
    """Whether ``exc`` says this process (EMFILE) or the system (ENFILE) ran out of
    descriptors: a failure that goes away once running jobs end."""
    return isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)


_devnull_fd: int | None = None


def devnull() -> int:
    """One ``/dev/null`` descriptor for every child's stdin (``subprocess.DEVNULL`` opens
    and closes one per spawn: two system calls a job); a forked child opens its own."""
    global _devnull_fd
    if _devnull_fd is None:
        _devnull_fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    return _devnull_fd


def _forget_devnull() -> None:
    global _devnull_fd
    _devnull_fd = None  # the parent's descriptor, inherited: not this process's to reuse


os.register_at_fork(after_in_child=_forget_devnull)
