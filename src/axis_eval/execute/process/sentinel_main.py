"""The sentinel's program: SIGKILLs a run's agents once the harness that started it is gone.

Started by :meth:`~.sentinel.Sentinel.start` (in an isolated interpreter, without the
package ``__init__``s; ``python -m axis_eval.execute.process.sentinel_main <run_token>``
works too), in its own session, with a pipe on stdin whose write end only the harness holds.
It prints ``ready``, then blocks reading stdin. EOF means the harness exited or died (even
by SIGKILL): the sentinel then kills every process whose environment has an
``AXIS_JOB_MARKER=<run_token>/...`` entry, sweeping until a few rounds in a row find
nothing, and exits. SIGTERM triggers the same sweep.

What the harness writes meanwhile are its adopted orphans (:mod:`.orphans`), processes that
may carry no marker: ``+<pid> <start tick>`` when it sees one, ``-<pid>`` when it is gone.
At EOF each one still alive with that start time (the pid not reused) is killed with its
descendants, and so is each marked process: its descendants that cleared their environment
without leaving it go too (:func:`kill_trees`).

Stdlib only, so it starts fast.
"""

from __future__ import annotations

import os
import sys
import time

from axis_eval.execute.process import procfs

TYPE_CHECKING = False  # mypy takes it as True; importing `typing` would slow the start
if TYPE_CHECKING:
    import signal
else:
    # The C module behind `signal`: the same calls and numbers without the enum wrappers,
    # whose imports (enum, functools, collections) would dominate this watchdog's start.
    import _signal as signal

_QUIET_ROUNDS = 3
_ROUND_PAUSE_S = 0.02
_SWEEP_LIMIT_S = 10.0


class _Terminated(Exception):
    """Raised from the SIGTERM handler to leave the blocking read."""


def _on_term(signum: int, frame: object) -> None:
    raise _Terminated


def _signal(pid: int, sig: int) -> bool:
    try:
        # Not through .kill: this watchdog loads the standard library and procfs only.
        os.kill(pid, sig)
    except OSError:
        return False
    return True


def kill_trees(roots: list[int]) -> int:
    """SIGKILL ``roots`` with all their descendants, marked or not; return how many died.

    Each process is stopped first (SIGSTOP) and its children read after, so a tree cannot
    grow while it is walked; a child forked while its parent was being stopped is caught by
    a second walk. A descendant that cleared its environment but did not leave its parent
    (an ``env -i`` child of a running agent) goes with it.
    """
    stopped: set[int] = set()
    todo = list(roots)
    for _ in range(_QUIET_ROUNDS):
        while todo:
            pid = todo.pop()
            if pid in stopped or not _signal(pid, signal.SIGSTOP):
                continue
            stopped.add(pid)
            todo.extend(procfs.all_children(pid))
        todo = [child for pid in stopped for child in procfs.all_children(pid)]
        todo = [pid for pid in todo if pid not in stopped]
        if not todo:
            break
    return sum(_signal(pid, signal.SIGKILL) for pid in stopped)


def sweep(prefix: bytes) -> int:
    """SIGKILL every process with an environment entry starting with ``prefix``, with its
    descendants; return the count."""
    killed = 0
    quiet = 0
    deadline = time.monotonic() + _SWEEP_LIMIT_S
    while quiet < _QUIET_ROUNDS and time.monotonic() < deadline:
        pids = procfs.find(prefix, prefix=True)
        quiet = 0 if pids else quiet + 1
        killed += kill_trees(pids)
        time.sleep(_ROUND_PAUSE_S)
    return killed


def read_orphans(line: bytes, into: dict[int, int]) -> None:
    """Apply one ``+<pid> <start>`` or ``-<pid>`` line from the harness to ``into``."""
    try:
        if line.startswith(b"+"):
            pid, start = line[1:].split()
            into[int(pid)] = int(start)
        elif line.startswith(b"-"):
            into.pop(int(line[1:]), None)
    except ValueError:
        pass  # a torn or foreign line: nothing to learn from it


def still_alive(recorded: dict[int, int]) -> list[int]:
    """The recorded orphans still running as the same process (the pid not reused)."""
    alive: list[int] = []
    for pid, start in recorded.items():
        info = procfs.process_info(pid)
        if info is not None and info[4] == start and info[0] not in ("Z", "X"):
            alive.append(pid)
    return alive


def main(argv: list[str] | None = None) -> int:
    """Wait for EOF (or SIGTERM) on stdin, then sweep the run's marked processes."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0] or "\0" in args[0]:
        print("usage: python -m axis_eval.execute.process.sentinel_main RUN_TOKEN", file=sys.stderr)
        return 2
    prefix = procfs.marker_entry(args[0] + "/")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    recorded: dict[int, int] = {}
    pending = b""
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while chunk := os.read(0, 65536):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                read_orphans(line, recorded)
            if len(pending) > 4096:  # not a line the harness writes: bounded memory
                pending = b""
    except (_Terminated, OSError):
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_trees(still_alive(recorded))
    sweep(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
