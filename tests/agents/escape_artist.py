"""Test agent that tries everything a hostile agent would to reach beyond its job.

Usage: ``escape_artist.py TOKEN HARNESS_PID SENTINEL_PID PLAN``. It reads the environ of
the harness and of the sentinel (their pids as the host sees them), lists ``/proc``, prints
its own environment, then does what PLAN (base64 of a JSON object, keys optional) says:

- ``reads``: files to read (the parent's planted secrets, other runs' transcripts...);
- ``lists``: folders to list (``/proc`` is always listed; ``$HOME`` is expanded);
- ``writes``: files to create, each holding TOKEN (``$HOME`` is expanded);
- ``open_for_write``: files to open for writing and close at once, writing nothing (kernel
  settings under ``/proc/sys``: the open alone says whether a write would be let through);
- ``symlinks``: ``[link, target]`` pairs: symbolic links to plant (``$HOME`` is expanded
  in ``link``), for whoever later opens ``link`` outside the sandbox;
- ``connect``: ``[host, port]`` to open a TCP connection to;
- ``sleepers``: how many children to fork that sleep on; ``daemons``: how many
  double-forked, ``setsid``, ``env -i`` daemons to start;
- ``hang``: after reporting, sleep until killed instead of exiting.

SIGTERM is ignored from the start (by this agent and, inherited, by everything it starts).
TOKEN is in the command line of every process it starts (the forks share this agent's; the
daemons get it as an argument), so a test finds survivors by scanning ``/proc/*/cmdline``.
Each probe prints one line ``{"type": "finding", "probe": ..., "target": ..., "ok": ...,
"data": ...}`` (``target``: the path as PLAN gave it; ``data``: what was read, listed or
written, or the error's text when not ok),
then ``{"type": "result", "text": "done"}``. What it reads is printed as it is: an agent
that can read a secret can send it anywhere, and here it goes to the job's output.
"""

import base64
import json
import os
import signal
import socket
import sys
import time

SLEEPER = "import time\nwhile True: time.sleep(60)"
READ_CAP = 8192


def finding(probe: str, target: str, ok: bool, data: object) -> None:
    line = {"type": "finding", "probe": probe, "target": target, "ok": ok, "data": data}
    print(json.dumps(line), flush=True)


def read(path: str, target: str) -> None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(READ_CAP)
    except OSError as exc:
        finding("read", target, False, str(exc))
        return
    finding("read", target, True, data.replace(b"\0", b"\n").decode(errors="replace"))


def listing(path: str, target: str) -> None:
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        finding("list", target, False, str(exc))
        return
    finding("list", target, True, names)


def write(path: str, target: str, token: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write(token)
    except OSError as exc:
        finding("write", target, False, str(exc))
        return
    finding("write", target, True, token)


def connect(host: str, port: int) -> None:
    target = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=2):
            pass
    except OSError as exc:
        finding("connect", target, False, str(exc))
        return
    finding("connect", target, True, "connected")


def environ_cleared(pid: int) -> bool:
    """``pid`` runs the sleeper with no environment: ``env -i`` has exec'd it. The command
    line says which program runs (this agent's fork, ``env``, then the sleeper) before the
    environment is read: mid-exec, a process's environ may read empty for a moment."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
        if argv[0] == b"env" or SLEEPER.encode() not in argv:
            return False
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read() == b""
    except OSError:
        return False


def daemon_state(pid: int) -> str:
    """What a daemon looks like when its environment is not (yet) empty."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[0].decode()
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            program = handle.read().split(b"\0")[0].decode(errors="replace")
        with open(f"/proc/{pid}/environ", "rb") as handle:
            size = len(handle.read())
    except OSError as exc:
        return f"unreadable: {exc}"
    return f"state {state}, running {program}, environ {size} bytes"


def start_daemons(count: int, token: str) -> list[int]:
    """Double-forked daemons in sessions of their own, environment cleared by ``env -i``."""
    read_end, write_end = os.pipe()
    for _ in range(count):
        middle = os.fork()
        if middle == 0:
            daemon = os.fork()
            if daemon == 0:
                os.setsid()
                argv = ["env", "-i", sys.executable, "-c", SLEEPER, token]
                os.execv("/usr/bin/env", argv)
            os.write(write_end, f"{daemon}\n".encode())
            os._exit(0)
        os.waitpid(middle, 0)
    os.close(write_end)
    data = b""
    while data.count(b"\n") < count and (chunk := os.read(read_end, 4096)):
        data += chunk
    os.close(read_end)
    daemons = [int(pid) for pid in data.split()]
    deadline = time.monotonic() + 10
    while not all(environ_cleared(pid) for pid in daemons) and time.monotonic() < deadline:
        time.sleep(0.005)  # until each exec of `env -i` has dropped the job's environment
    return daemons


def start_sleepers(count: int) -> list[int]:
    pids = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            while True:
                time.sleep(60)
        pids.append(pid)
    return pids


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    token, harness, sentinel, encoded = sys.argv[1:5]
    plan = json.loads(base64.b64decode(encoded))
    home = os.environ.get("HOME", "")
    expand = lambda path: path.replace("$HOME", home)  # noqa: E731
    for pid in (harness, sentinel):
        read(f"/proc/{pid}/environ", f"/proc/{pid}/environ")
    listing("/proc", "/proc")
    for path in plan.get("reads", []):
        read(expand(path), path)
    for path in plan.get("lists", []):
        listing(expand(path), path)
    for path in plan.get("writes", []):
        write(expand(path), path, token)
    for path in plan.get("open_for_write", []):
        try:
            os.close(os.open(path, os.O_WRONLY))  # no O_TRUNC, no byte written
        except OSError as exc:
            finding("open-w", path, False, str(exc))
        else:
            finding("open-w", path, True, "opened for writing")
    for link, target in plan.get("symlinks", []):
        try:
            os.symlink(target, expand(link))
        except OSError as exc:
            finding("symlink", link, False, str(exc))
        else:
            finding("symlink", link, True, target)
    if plan.get("connect"):
        host, port = plan["connect"]
        connect(host, int(port))
    own_env = "\n".join(f"{k}={v}" for k, v in os.environ.items())
    finding("own-env", "os.environ", True, own_env)
    daemons = start_daemons(int(plan.get("daemons", 0)), token)
    late = {pid: daemon_state(pid) for pid in daemons if not environ_cleared(pid)}
    finding("daemons", "env -i", not late, {"count": len(daemons), "not cleared": late})
    sleepers = start_sleepers(int(plan.get("sleepers", 0)))
    finding("sleepers", "fork", True, len(sleepers))
    print(json.dumps({"type": "result", "text": "done"}), flush=True)
    if plan.get("hang"):
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
