"""Test agent with a child; both wait until the file named by argv[1] exists, then exit 0."""

import json
import os
import sys
import time


def wait_for(path: str) -> None:
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(3)
        time.sleep(0.05)


def main() -> None:
    child = os.fork()
    if child == 0:
        wait_for(sys.argv[1])
        os._exit(0)
    print(json.dumps({"pid": os.getpid(), "child": child}), flush=True)
    wait_for(sys.argv[1])
    _, status = os.waitpid(child, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
