"""The sentinel: a watchdog process that SIGKILLs this run's agents when the harness dies.

Its program is :mod:`.sentinel_main`, run in an isolated interpreter; this module starts it
and closes it. While it runs, the run claims this process's adopted orphans
(:mod:`.orphans`): the ones no live job can own are killed, and every one seen is written to
the sentinel's stdin (``+<pid> <start tick>`` / ``-<pid>``), so the sentinel also kills the
processes that carry no marker if the harness dies. Its close kills whatever orphan is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Collection, Mapping
from pathlib import Path

from axis_eval.execute.process import orphans
from axis_eval.execute.process.kill import send_signal
from axis_eval.execute.process.spawning import ChildProtocol, SpawnFailed, exec_in_session

__all__ = ["Sentinel"]

_BOOT = """\
import sys, types
folder = sys.argv.pop(1)
names = ("axis_eval", "axis_eval.execute", "axis_eval.execute.process")
for depth, name in enumerate(names):
    package = types.ModuleType(name)
    package.__path__ = [folder.rsplit("/", len(names) - 1 - depth)[0]]
    sys.modules[name] = package
from axis_eval.execute.process.sentinel_main import main
sys.exit(main())
"""
"""Starts the watchdog in an isolated interpreter without site-packages (``-I -S``): stub
packages stand in for ``axis_eval``, ``axis_eval.execute`` and this package so only the two
stdlib-only modules load, and it is ready in about the time of a bare ``python -c pass``."""


class Sentinel:
    """Watchdog process that SIGKILLs this run's agents when the harness dies.

    ``sentinel = await Sentinel.start(run_token)`` before spawning agents; ``await
    sentinel.close()`` on a normal exit (this process kills its adopted orphans, then the
    sentinel sweeps the marked leftovers and exits).
    """

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: ChildProtocol) -> None:
        self.pid = transport.get_pid()
        self._transport = transport
        self._protocol = protocol
        self._closed = False
        self._claimed = False

    def _tell(self, added: Mapping[int, int], gone: Collection[int]) -> None:
        """Report adopted orphans to the sentinel (it kills them if the harness dies)."""
        stdin = self._protocol.stdin
        if stdin is None or stdin.is_closing():
            return
        lines = [f"+{pid} {start}\n" for pid, start in added.items()]
        lines.extend(f"-{pid}\n" for pid in gone)
        stdin.write("".join(lines).encode())

    @classmethod
    async def start(cls, run_token: str, *, timeout_s: float = 10.0) -> Sentinel:
        """Start the watchdog for ``run_token`` and wait until it is listening."""
        package = Path(__file__).resolve().parent
        argv = [sys.executable, "-I", "-S", "-c", _BOOT, str(package), run_token]
        try:
            transport, protocol = await exec_in_session(
                argv, cwd=None, env=dict(os.environ), stdin_pipe=True, marker=None
            )
        except OSError as exc:
            raise SpawnFailed(f"cannot start the sentinel: {exc}") from exc
        sentinel = cls(transport, protocol)
        assert protocol.stdout is not None
        try:
            line = await asyncio.wait_for(protocol.stdout.readline(), timeout_s)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            await sentinel.close(timeout_s=1.0)
            err = b""
            if protocol.stderr is not None and sentinel._transport.is_closing():
                err = await protocol.stderr.read(4096)
            raise SpawnFailed(f"the sentinel did not start: {err.decode(errors='replace')}")
        orphans.claim(sentinel._tell)
        sentinel._claimed = True
        return sentinel

    async def close(self, timeout_s: float = 5.0) -> None:
        """Kill the adopted orphans left, close its pipe (it kills any leftover marked
        process) and wait for it to exit."""
        if self._closed:
            return
        self._closed = True
        if self._claimed:
            try:
                await orphans.sweep(final=True)  # the run is over: no job can own them
            finally:
                orphans.release(self._tell)
        if self._protocol.stdin is not None:
            self._protocol.stdin.close()
        try:
            await asyncio.wait_for(self._protocol.exited.wait(), timeout_s)
        except TimeoutError:
            send_signal(self.pid, signal.SIGKILL)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._protocol.exited.wait(), 1.0)
        if self._transport.get_returncode() is not None:
            self._transport.close()
