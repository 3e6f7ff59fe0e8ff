"""Test agent with a child no marker names that stays its child: ``setsid`` + empty env.

Usage: ``proc_unmarked_child.py``. Prints ``{"pid": <agent>, "child": <child>}`` once the
child runs with no environment, then sleeps forever (the child is never orphaned while
the agent lives).
"""

import json
import os
import time


def environ_cleared(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read() == b""
    except OSError:
        return False


child = os.fork()
if child == 0:
    os.setsid()
    os.execve("/bin/sleep", ["sleep", "600"], {})
deadline = time.monotonic() + 10
while not environ_cleared(child) and time.monotonic() < deadline:
    time.sleep(0.005)
print(json.dumps({"pid": os.getpid(), "child": child}), flush=True)
while True:
    time.sleep(60)
