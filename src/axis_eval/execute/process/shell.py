"""Shell commands of a job (setup, teardown, checks): ``/bin/sh -c`` with a time limit."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from axis_eval.execute.process import activity, children
from axis_eval.execute.process.reaping import is_subreaper
from axis_eval.execute.process.spawning import (
    PIPE_DRAIN_S,
    ManagedProcess,
    ProcessSpec,
    Spawner,
    spawn,
)

__all__ = ["SHELL_OUTPUT_CAP", "ShellResult", "run_shell"]

SHELL_OUTPUT_CAP = 1024 * 1024
"""run_shell keeps at most this many trailing bytes of each stream."""


@dataclass(frozen=True)
class ShellResult:
    """Outcome of :func:`run_shell`; each stream holds at most its last 1 MiB."""

    exit_code: int | None
    """None when the command timed out."""
    stdout: str
    stderr: str
    timed_out: bool
    duration_ms: int
    stopped: bool = False
    """``stop`` fired first: the command was stopped (its exit code is then None too)."""


async def _tail(reader: asyncio.StreamReader, cap: int) -> bytes:
    buf = bytearray()
    while chunk := await reader.read(64 * 1024):
        buf += chunk
        if len(buf) > 2 * cap:
            del buf[:-cap]
    return bytes(buf[-cap:])


async def _exits_in_time(
    proc: ManagedProcess, timeout_s: float, stop: asyncio.Event | None
) -> bool:
    """Whether the command exits before ``timeout_s`` and before ``stop`` fires."""
    if stop is None:
        try:
            await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError:
            return False
        return True
    exit_ = asyncio.ensure_future(proc.wait())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({exit_, stopped}, timeout=timeout_s, return_when="FIRST_COMPLETED")
    finally:
        exit_.cancel()
        stopped.cancel()
    return exit_.done() and not exit_.cancelled()


async def run_shell(
    command: str,
    *,
    cwd: str,
    env: dict[str, str],
    marker: str,
    timeout_s: float,
    grace_s: float = 5.0,
    spawner: Spawner = spawn,
    stop: asyncio.Event | None = None,
) -> ShellResult:
    """Run ``/bin/sh -c command`` in its own group with ``marker``, stdin from /dev/null.

    ``spawner`` starts it (a job's sandbox passes its own: the command then runs where the
    agent does).

    On timeout, or when ``stop`` fires, the group and every process with ``marker`` are
    stopped (SIGTERM, ``grace_s``, SIGKILL). When the shell exits
    in time, background processes it started are left alone (they carry the marker, so the
    job's cleanup gets them); their hold on the output pipes is dropped after a moment.
    """
    started = time.monotonic()
    proc = await spawner(ProcessSpec(["/bin/sh", "-c", command], cwd, env, marker))
    readers = [
        asyncio.ensure_future(_tail(r, SHELL_OUTPUT_CAP)) for r in (proc.stdout, proc.stderr)
    ]
    timed_out = stopped = False
    try:
        if not await _exits_in_time(proc, timeout_s, stop):
            stopped = stop is not None and stop.is_set()
            timed_out = not stopped
            await proc.stop(grace_s)
        remaining = timeout_s - (time.monotonic() - started)
        await asyncio.wait(readers, timeout=min(PIPE_DRAIN_S, max(remaining, 0.1)))
        proc.close_pipes()
        out, err = await asyncio.gather(*readers)
    except BaseException:
        for reader in readers:
            reader.cancel()
        proc.kill_now()
        proc.close_pipes()
        raise
    if spawner is spawn and not children.has_marker(marker) and not is_subreaper():
        # (A sandbox owns its commands' processes: the job's end stops them.) What the
        # shell left running was re-parented past this process (to init) as the shell
        # exited: nothing of it can become our adopted orphan (a beforeAll hook's
        # services must not hold back the run's orphan cleanup, see .activity).
        activity.end(marker)
    return ShellResult(
        exit_code=None if timed_out or stopped else proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        timed_out=timed_out,
        duration_ms=int((time.monotonic() - started) * 1000),
        stopped=stopped,
    )
