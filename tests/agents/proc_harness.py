"""Test harness: subreaper + sentinel + one agent; prints pids, waits forever.

``proc_harness.py [SCRIPT ARGS...]``: the agent is SCRIPT from this folder (proc_tree.py by
default); the line printed is the agent's first line (its pids) plus the sentinel's pid.
With proc_daemon.py the agent leaves an unmarked daemon (its pid in the PIDFILE argument)
and exits; the line is printed once the sentinel has been told of the daemon
(``reported``: the pids the sentinel knows).

The test SIGKILLs this process and checks that nothing it started survives.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

from axis_eval.execute.process import (
    OrphanReaper,
    ProcessSpec,
    Sentinel,
    become_subreaper,
    new_run_token,
    orphans,
    spawn,
)

HERE = Path(__file__).resolve().parent


async def main() -> None:
    if not become_subreaper():
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    token = new_run_token()
    sentinel = await Sentinel.start(token)
    args = sys.argv[1:] or ["proc_tree.py"]
    async with OrphanReaper(interval_s=0.05):
        spec = ProcessSpec(
            argv=[sys.executable, str(HERE / args[0]), *args[1:]],
            cwd=str(HERE),
            env=dict(os.environ),
            marker=f"{token}/job1",
        )
        agent = await spawn(spec)
        if args[0] == "proc_daemon.py":
            await agent.wait()
            while not orphans.reported():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # the line written to the sentinel's pipe is read
            info = {"reported": sorted(orphans.reported()), "sentinel": sentinel.pid}
        else:
            tree = json.loads(await agent.stdout.readline())
            info = {**tree, "sentinel": sentinel.pid}
        print(json.dumps(info), flush=True)
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
