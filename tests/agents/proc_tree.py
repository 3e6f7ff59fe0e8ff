"""Test agent that leaves a tree behind: a child, a setsid child and a double-forked orphan.

Prints their pids as one JSON line, then sleeps forever.
"""

import json
import os
import time


def sleep_forever() -> None:
    while True:
        time.sleep(60)


def main() -> None:
    child = os.fork()
    if child == 0:
        sleep_forever()
    setsid_child = os.fork()
    if setsid_child == 0:
        os.setsid()
        sleep_forever()
    read_end, write_end = os.pipe()
    middle = os.fork()
    if middle == 0:  # fork again and exit, so the grandchild is orphaned (a classic daemon)
        os.close(read_end)
        orphan = os.fork()
        if orphan == 0:
            os.close(write_end)
            os.setsid()
            sleep_forever()
        os.write(write_end, str(orphan).encode())
        os._exit(0)
    os.close(write_end)
    orphan = int(os.read(read_end, 64))
    os.waitpid(middle, 0)
    pids = {"pid": os.getpid(), "child": child, "setsid": setsid_child, "orphan": orphan}
    print(json.dumps(pids), flush=True)
    sleep_forever()


if __name__ == "__main__":
    main()
