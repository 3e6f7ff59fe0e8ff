"""The sentinel's program: SIGKILLs a run's agents once the harness that started it is gone.

Started by :meth:`~.sentinel.Sentinel.start` (in an isolated interpreter, without the
package ``__init__``s; ``python -m axis_eval.execute.process.sentinel_main <run_token>``
works too), in its own session, with a pipe on stdin whose write end only the harness holds.
It prints ``ready``, then blocks reading stdin. EOF means the harness exited or died (even
by SIGKILL): the sentinel then kills every process whose environment has an
``AXIS_JOB_MARKER=<run_token>/...`` entry, sweeping until a few rounds in a row find
nothing, and exits. SIGTERM triggers the same sweep.

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


def sweep(prefix: bytes) -> int:
    """SIGKILL every process with an environment entry starting with ``prefix``; return count."""
    killed = 0
    quiet = 0
    deadline = time.monotonic() + _SWEEP_LIMIT_S
    while quiet < _QUIET_ROUNDS and time.monotonic() < deadline:
        pids = procfs.find(prefix, prefix=True)
        quiet = 0 if pids else quiet + 1
        for pid in pids:
            try:
                # Not through .kill: this watchdog loads the standard library and procfs only.
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(_ROUND_PAUSE_S)
    return killed


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
    try:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while os.read(0, 4096):
            pass
    except (_Terminated, OSError):
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sweep(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
