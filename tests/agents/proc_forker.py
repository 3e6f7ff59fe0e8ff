"""Test agent that ignores SIGTERM and keeps forking (up to 100 sleeping children, some setsid).

Prints ``ready`` once the first children exist, then forks one more every few milliseconds,
so a stop always races against new processes.
"""

import os
import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
for n in range(100):
    if os.fork() == 0:
        if n % 2:
            os.setsid()
        while True:
            time.sleep(60)
    if n == 5:
        print("ready", flush=True)
    time.sleep(0.005)
while True:
    time.sleep(60)
