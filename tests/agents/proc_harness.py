"""Test harness: subreaper + sentinel + one agent (proc_tree.py); prints pids, waits forever.

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
    spawn,
)

HERE = Path(__file__).resolve().parent


async def main() -> None:
    if not become_subreaper():
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    token = new_run_token()
    sentinel = await Sentinel.start(token)
    async with OrphanReaper():
        spec = ProcessSpec(
            argv=[sys.executable, str(HERE / "proc_tree.py")],
            cwd=str(HERE),
            env=dict(os.environ),
            marker=f"{token}/job1",
        )
        agent = await spawn(spec)
        tree = json.loads(await agent.stdout.readline())
        print(json.dumps({**tree, "sentinel": sentinel.pid}), flush=True)
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main())
