"""Test agent: a fork storm. ``proc_storm.py PIDFILE N`` forks N children in a burst, then exits.

Of every 8 children: one double-forks a daemon that leaves the session, clears its
environment (``execve`` of ``sleep 30`` with no environment: no marker) and is orphaned;
two double-fork an orphan that exits within 0.2 s; two exit at once (zombies, adopted by the
subreaper when this agent exits); three exit after 20 ms. None is waited for. The daemons'
pids go to PIDFILE once they are unmarked; the last line is ``result: forked N``.
"""

import json
import os
import sys
import time


def environ_cleared(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read() == b""
    except OSError:
        return False


def child(kind: int, write_end: int) -> None:
    if kind == 0:
        daemon = os.fork()
        if daemon == 0:
            os.setsid()
            os.execve("/bin/sleep", ["sleep", "30"], {})
        os.write(write_end, f"{daemon}\n".encode())
    elif kind in (1, 2):
        if os.fork() == 0:
            time.sleep(0.05 * kind)
    elif kind >= 5:
        time.sleep(0.02)
    os._exit(0)


def main() -> None:
    pidfile, count = sys.argv[1], int(sys.argv[2])
    read_end, write_end = os.pipe()
    for n in range(count):
        if os.fork() == 0:
            os.close(read_end)
            child(n % 8, write_end)
    os.close(write_end)
    expected = len(range(0, count, 8))
    data = b""
    while data.count(b"\n") < expected and (chunk := os.read(read_end, 4096)):
        data += chunk
    daemons = [int(pid) for pid in data.split()]
    deadline = time.monotonic() + 10
    while not all(environ_cleared(pid) for pid in daemons) and time.monotonic() < deadline:
        time.sleep(0.005)
    with open(pidfile, "w") as handle:
        handle.write("".join(f"{pid}\n" for pid in daemons))
    print(json.dumps({"type": "result", "text": f"forked {count}"}), flush=True)


if __name__ == "__main__":
    main()
