"""The task runner's supervisor and axis_eval share one reaping state (the children
registry of axis_eval.execute.process): neither's orphan reaper takes the other's child."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time

from ax_task_runner import supervisor
from axis_eval.execute.process import (
    ProcessSpec,
    children,
    new_run_token,
    pidfd_child_watcher,
    procfs,
    reap_orphans,
    spawn,
)


def _until_zombie(pid: int) -> None:
    """Block (the event loop too: with pidfds nothing reaps the child meanwhile) until
    ``pid`` has exited and waits, unreaped, for its parent."""
    deadline = time.monotonic() + 10
    while (info := procfs.stat(pid)) is None or info[0] != "Z":
        assert time.monotonic() < deadline, f"{pid} never became a zombie"
        time.sleep(0.01)


# Each child sleeps a moment: it must still run when its spawn returns, and exit while the
# event loop is blocked in _until_zombie.


def test_a_runner_child_is_known_to_axis_evals_reaper() -> None:
    async def main() -> int:
        proc = await supervisor.start_process(
            ["/bin/sh", "-c", "sleep 0.3; exit 7"], cwd="/", env={}
        )
        assert children.is_owned(proc.pid)
        _until_zombie(proc.pid)
        assert proc.pid not in reap_orphans()  # axis_eval's reaper leaves the runner's child
        code = await supervisor.wait_process(proc)
        assert not children.is_owned(proc.pid)
        return code

    with pidfd_child_watcher():
        assert asyncio.run(main()) == 7  # a stolen status would read 255


def test_an_axis_eval_agent_is_known_to_the_runners_reaper() -> None:
    async def main() -> int:
        marker = f"{new_run_token()}/job1"
        proc = await spawn(
            ProcessSpec(["/bin/sh", "-c", "sleep 0.3; exit 5"], "/", dict(os.environ), marker)
        )
        assert children.is_owned(proc.pid)
        _until_zombie(proc.pid)
        assert proc.pid not in supervisor.reap_orphans()
        code = await proc.wait()
        await proc.stop(grace_s=1)
        assert not children.is_owned(proc.pid)
        return code

    with pidfd_child_watcher():
        assert asyncio.run(main()) == 5


def test_a_spawn_in_flight_holds_back_both_reapers_for_children_born_since() -> None:
    # A child no one registered: an orphan reaper may take it, but not while a spawner of
    # the process is between starting a child and registering its pid, if it was born in
    # that time (it may be that spawn's child); one born before every spawn in flight is
    # an orphan whatever is in flight (with many jobs at once, a spawn nearly always is).
    before = subprocess.Popen(["/bin/sh", "-c", "exit 0"])
    _until_zombie(before.pid)
    time.sleep(3 / os.sysconf("SC_CLK_TCK"))  # a few clock ticks: its birth is older
    with children.spawning():
        during = subprocess.Popen(["/bin/sh", "-c", "exit 0"])
        _until_zombie(during.pid)
        assert reap_orphans() == [before.pid]
        before.returncode = 0  # reaped: keep Popen from waiting for it again
        assert supervisor.reap_orphans() == [] and reap_orphans() == []
        assert procfs.stat(during.pid) is not None  # still a zombie, left to its spawner
    assert during.pid in supervisor.reap_orphans()
    during.returncode = 0
