"""A test agent for test_crash_safety.py: holds a process tree until it is released.

Without ``$E2E_DIR/release`` it starts a child in its own group and session (found only by
the job's marker, or under bwrap by its PID namespace) and one in its group, writes the
three pids (of its PID namespace under bwrap) to ``$E2E_DIR/holder.json`` and sleeps
forever: a run that crashes meanwhile must kill all three. With the file (the resume), it
answers at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def sleep_forever() -> None:
    while True:
        time.sleep(60)


def main() -> int:
    out = Path(os.environ["E2E_DIR"])
    if (out / "release").exists():
        print(json.dumps({"type": "result", "text": "released"}), flush=True)
        return 0
    pids = {"pid": os.getpid()}
    for key, new_session in (("child", False), ("setsid", True)):
        pid = os.fork()
        if pid == 0:
            if new_session:
                os.setsid()
            sleep_forever()
        pids[key] = pid
    tmp = out / "holder.json.part"
    tmp.write_text(json.dumps(pids))
    os.replace(tmp, out / "holder.json")
    print(json.dumps({"type": "assistant", "text": "holding"}), flush=True)
    sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
