"""Test agent that ignores SIGTERM, as does the child it forks; prints pids, sleeps forever."""

import json
import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    while True:
        time.sleep(60)
print(json.dumps({"pid": os.getpid(), "child": child}), flush=True)
while True:
    time.sleep(60)
