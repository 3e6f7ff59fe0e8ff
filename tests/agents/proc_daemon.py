"""Test agent that leaves a daemon no marker names: double-forked, setsid, ``env -i``.

Usage: ``proc_daemon.py PIDFILE [GATE]``. The daemon's pid goes to PIDFILE (written once
the daemon has cleared its environment). With GATE the agent then waits for that file to
exist; either way it ends with a ``result`` line saying whether its daemon is still alive
(so a job can tell whether its own helper was killed while it ran), and exits 0.
"""

import json
import os
import sys
import time

SLEEPER = "import time\nwhile True: time.sleep(60)"


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def environ_cleared(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read() == b""
    except OSError:
        return False


def main() -> None:
    pidfile = sys.argv[1]
    gate = sys.argv[2] if len(sys.argv) > 2 else None
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:
        os.close(read_end)
        daemon = os.fork()
        if daemon == 0:  # the daemon: a session of its own, then no environment at all
            os.close(write_end)
            os.setsid()
            os.execv("/usr/bin/env", ["env", "-i", sys.executable, "-c", SLEEPER])
        os.write(write_end, str(daemon).encode())
        os._exit(0)  # the daemon is orphaned: re-parented to the nearest subreaper
    os.close(write_end)
    daemon = int(os.read(read_end, 64))
    os.waitpid(middle, 0)
    deadline = time.monotonic() + 10
    while not environ_cleared(daemon) and time.monotonic() < deadline:
        time.sleep(0.005)  # until the exec of `env -i` has dropped the marker
    with open(pidfile, "a") as handle:
        handle.write(f"{daemon}\n")
    if gate is not None:
        deadline = time.monotonic() + 30
        while not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.01)
    state = "alive" if alive(daemon) else "gone"
    print(json.dumps({"type": "result", "text": f"daemon {daemon} {state}"}), flush=True)


if __name__ == "__main__":
    main()
