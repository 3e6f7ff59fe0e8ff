"""Does bubblewrap work here? One probe per process, remembered.

``auto`` picks ``bwrap`` only when a real sandbox starts: the binary is on PATH and a
minimal profile with the namespaces the jobs use runs ``true``. It fails where user
namespaces are refused (stock Ubuntu 24.04's AppArmor rule for unprivileged users, most
containers' seccomp profile), and the reason bwrap printed is kept for the warning.

The same probe tells whether this bwrap can bound a tmpfs (``--size``: bubblewrap 0.7 and
later, not installed setuid): the sandbox's in-memory folders are then bounded
(``bwrap_mounts``); one that cannot still confines, with a warning that those folders are
bounded only by the RAM.
"""

from __future__ import annotations

import functools
import shutil

from axis_eval._util.processes import HelperTimeout, run_helper

__all__ = [
    "bwrap_path",
    "bwrap_problem",
    "bwrap_size_problem",
    "bwrap_sizes_tmpfs",
    "unbounded_tmpfs_warning",
]

_PROBE_TIMEOUT_S = 10.0
_REFUSED = "bwrap cannot create a sandbox here: "


def bwrap_path() -> str | None:
    """The bwrap binary on PATH, or None."""
    return shutil.which("bwrap")


@functools.cache
def _probe() -> tuple[str | None, str | None]:
    """(why bwrap cannot confine jobs here, why it cannot bound a tmpfs): None for each
    where it can."""
    path = bwrap_path()
    if path is None:
        missing = "bwrap (Debian/Ubuntu package bubblewrap) is not installed"
        return missing, missing
    problem = _try(path, sized=True)
    if problem is not None and "--size" in problem:
        # "Unknown option --size" before 0.7; "not permitted in setuid mode" after.
        return _try(path, sized=False), problem.removeprefix(_REFUSED)
    return problem, problem


def _try(path: str, *, sized: bool) -> str | None:
    size = ["--size", "1048576"] if sized else []
    argv = [
        path,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        *size, "--tmpfs", "/tmp",
        "--remount-ro", "/dev",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--", "true",
    ]  # fmt: skip
    try:
        done = run_helper(argv, timeout_s=_PROBE_TIMEOUT_S, max_output_bytes=65536)
    except (OSError, HelperTimeout) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip()
        detail = text.splitlines()[-1] if text else f"exit code {done.returncode}"
        return f"{_REFUSED}{detail}"
    return None


def bwrap_problem() -> str | None:
    """Why bubblewrap cannot confine jobs here; None when it can."""
    return _probe()[0]


def bwrap_sizes_tmpfs() -> bool:
    """Whether this bwrap bounds the size of a tmpfs (``--size``)."""
    return _probe()[1] is None


def bwrap_size_problem() -> str | None:
    """Why this bwrap cannot bound a tmpfs (bwrap's own words: an unknown option before
    0.7, refused in setuid mode); None when it can."""
    return _probe()[1]


def unbounded_tmpfs_warning() -> str | None:
    """The pre-flight's warning where bwrap confines but cannot bound a tmpfs (``axis run``
    and each Dask worker give it); None where bwrap cannot confine at all, or can bound."""
    problem, unsized = _probe()
    if problem is not None or unsized is None:
        return None
    return (
        f"sandbox bwrap: this bubblewrap cannot bound a tmpfs ({unsized}; bubblewrap 0.7 "
        "or later, not setuid, can): a job's /tmp, /var/tmp, /dev/shm and passwd home are "
        "bounded only by the RAM (docs/sandboxes.md)"
    )
