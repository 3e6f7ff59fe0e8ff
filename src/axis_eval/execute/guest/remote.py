"""A guest process as a :class:`~axis_eval.execute.process.ManagedProcess`.

:meth:`GuestClient.spawn <axis_eval.execute.guest.GuestClient.spawn>` returns one. Its
``stdout`` and ``stderr`` are asyncio readers fed by one StreamProcessOutput call
(``follow``); while a reader holds more than twice its limit
(:data:`~axis_eval.execute.process.STREAM_LIMIT`, 1 MiB) the call is not read, so its
HTTP/2 window fills and the runner keeps the rest (a flooding process costs us at most
the readers' buffers and one window, :data:`STREAM_WINDOW`). A second call on the same
connection, from offsets past any output, carries only the exit message: the exit is
known when the process ends, however far behind the readers are. The connection is the
process's own, so a stalled output stream never holds back another process or a signal
(those go over the client's connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from axis_eval.execute.guest.models import GuestError, ProcessState, returncode_of
from axis_eval.execute.process import STREAM_LIMIT
from axis_eval.execute.pump_flow import PumpFlow

if TYPE_CHECKING:
    from axis_eval.execute.guest._rpc import Rpc
    from axis_eval.execute.guest.stdin import InputTransport
    from axis_eval.execute.process import ManagedProcess

__all__ = ["KILL_WAIT_S", "OUTPUT_DRAIN_S", "STREAM_WINDOW", "RemoteProcess"]

STREAM_WINDOW = 1024 * 1024
"""HTTP/2 window of a process's output stream: what the runner may send before we read."""
KILL_WAIT_S = 5.0
"""After SIGKILL, how long :meth:`RemoteProcess.stop` waits for the runner to report the
exit (it reports it once the process's pipes are drained, at most 2 s after the death)."""
OUTPUT_DRAIN_S = 1.0
"""After the exit, :meth:`RemoteProcess.stop` lets the output stream deliver its tail for
as long as the readers take some of it within this many seconds."""
_SIGNAL_CALL_S = 5.0
_RETRIES = 3
_FAR = 1 << 62  # an offset past any output: a stream that carries only the exit
_LOST_EXIT = 128 + signal.SIGKILL


class RemoteProcess:
    """A process of a guest, started by :meth:`GuestClient.spawn`.

    The members of :class:`~axis_eval.execute.process.ManagedProcess` mean what they mean
    on :class:`~axis_eval.execute.process.AgentProcess`, with these differences:

    - :attr:`returncode` follows asyncio's convention from the runner's exit status
      (``128 + n`` reads as ``-n``: :func:`~.models.returncode_of`);
    - :meth:`stop` ends the process group through the runner (SignalProcess: SIGTERM,
      ``grace_s``, SIGKILL) while the process itself runs; what it left running after
      it exited (a ``setsid`` child) is the guest's to end (a container's end);
    - when the runner can no longer be reached, the process counts as killed
      (:attr:`returncode` -9) and :attr:`lost` says why.
    """

    def __init__(
        self,
        control: Rpc,
        streams: Rpc,
        state: ProcessState,
        *,
        merge_stderr: bool = False,
        stdin: tuple[asyncio.StreamWriter, InputTransport] | None = None,
    ) -> None:
        self.process_id = state.process_id
        self.pid = state.pid
        """Its pid inside the guest."""
        self._control = control
        self._streams = streams
        self._merge = merge_stderr
        self.stdout = asyncio.StreamReader(limit=STREAM_LIMIT)
        self.stderr = asyncio.StreamReader(limit=STREAM_LIMIT)
        self._flows = (PumpFlow(), PumpFlow())
        self.stdout.set_transport(self._flows[0])
        self.stderr.set_transport(self._flows[1])
        if merge_stderr:
            self.stderr.feed_eof()
        self.stdin: asyncio.StreamWriter | None = stdin[0] if stdin else None
        """The process's stdin when spawned with ``stdin_pipe=True`` (a StreamWriter over
        WriteProcessInput); close it to send EOF."""
        self._stdin = stdin[1] if stdin else None
        self.lost: GuestError | None = None
        """Why the runner could no longer be reached, if it could not."""
        self._exit: ProcessState | None = None
        self._exited = asyncio.Event()
        self._callbacks: list[Callable[[], object]] = []
        self._lock = asyncio.Lock()
        self._stopped = False
        self._kills: set[asyncio.Task[None]] = set()
        self._fed = 0
        loop = asyncio.get_running_loop()
        self._pump = loop.create_task(self._pump_output())
        self._watch = loop.create_task(self._watch_exit())

    # -- ManagedProcess

    @property
    def returncode(self) -> int | None:
        """Exit code; a negative signal number for a death by signal; None while running."""
        code = self._exit.exit_code if self._exit is not None else None
        return None if code is None else returncode_of(code)

    @property
    def exited(self) -> bool:
        """Whether the runner has reported the process's exit."""
        return self._exited.is_set()

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has finished."""
        return self._stopped

    def add_exit_callback(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` on the event loop when the process exits (soon, if it has)."""
        if self.exited:
            asyncio.get_running_loop().call_soon(callback)
        else:
            self._callbacks.append(callback)

    async def wait(self) -> int:
        """Wait for the process's exit; its :attr:`returncode`."""
        await self._exited.wait()
        code = self.returncode
        assert code is not None
        return code

    async def signal(self, sig: int) -> None:
        """Send ``sig`` to the process's group (nothing once it has exited)."""
        if not self.exited:
            with contextlib.suppress(GuestError, TimeoutError):
                await asyncio.wait_for(self._control.signal(self.process_id, sig), _SIGNAL_CALL_S)

    async def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the group, SIGKILL it after ``grace_s``, wait for the exit and the tail
        of the output, then stop streaming (readers see EOF after what they hold).
        Idempotent; safe after the exit. Cancelled meanwhile, it sends SIGKILL (without
        waiting) before the cancellation goes on."""
        async with self._lock:
            if self._stopped:
                return
            try:
                if not self.exited:
                    await self.signal(signal.SIGTERM)
                    if not await self._exits_within(grace_s):
                        await self.signal(signal.SIGKILL)
                        await self._exits_within(KILL_WAIT_S)
                await self._drain_output()
            except BaseException:
                self.kill_now()
                raise
            finally:
                self.close_pipes()
            self._stopped = True

    def kill_now(self) -> None:
        """SIGKILL the group, best effort and without waiting (for paths that cannot
        await); :meth:`stop` is still due afterwards."""
        if self.exited:
            return
        task = asyncio.get_running_loop().create_task(self.signal(signal.SIGKILL))
        self._kills.add(task)
        task.add_done_callback(self._kills.discard)

    def close_pipes(self) -> None:
        """Stop streaming: the readers get EOF after what they hold, stdin is closed and
        the process's connection too. Never signals the process."""
        self._pump.cancel()
        self._watch.cancel()
        if self._stdin is not None:
            self._stdin.abort()
        for reader in (self.stdout, self.stderr):
            if not reader.at_eof():
                reader.feed_eof()
        self._streams.close()

    async def __aenter__(self) -> RemoteProcess:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- the streams

    async def _exits_within(self, seconds: float) -> bool:
        if not self.exited and seconds > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited.wait(), seconds)
        return self.exited

    async def _drain_output(self) -> None:
        """Let the output stream deliver its tail (the runner may hold much more than a
        pipe would) while the readers keep taking it; give up after
        :data:`OUTPUT_DRAIN_S` without progress."""
        while not self._pump.done():
            seen = self._fed
            await asyncio.wait({self._pump}, timeout=OUTPUT_DRAIN_S)
            if self._fed == seen:
                return

    def _set_exit(self, state: ProcessState) -> None:
        if self._exit is not None or state.running:
            return
        self._exit = state
        self._exited.set()
        loop = asyncio.get_running_loop()
        for callback in self._callbacks:
            loop.call_soon(callback)
        self._callbacks.clear()

    def _set_lost(self, exc: GuestError) -> None:
        if self.lost is None:
            self.lost = exc
        self._set_exit(ProcessState(self.process_id, False, _LOST_EXIT, self.pid))

    async def _feed(self, which: int, data: bytes) -> None:
        reader = self.stdout if which == 0 or self._merge else self.stderr
        flow = self._flows[0] if reader is self.stdout else self._flows[1]
        reader.feed_data(data)
        self._fed += len(data)
        if not flow.ready.is_set():
            await flow.ready.wait()  # the reader is behind: leave the rest in the window

    async def _pump_output(self) -> None:
        offsets = [0, 0]
        failures = 0
        try:
            while True:
                try:
                    chunks = self._streams.output(
                        self.process_id,
                        follow=True,
                        stdout_offset=offsets[0],
                        stderr_offset=offsets[1],
                    )
                    async with contextlib.aclosing(chunks):
                        async for chunk in chunks:
                            failures = 0
                            if chunk.exit is not None:
                                self._set_exit(chunk.exit)
                            for which, data in enumerate((chunk.stdout, chunk.stderr)):
                                if data:
                                    offsets[which] += len(data)
                                    await self._feed(which, data)
                    return
                except GuestError as exc:
                    failures += 1
                    if exc.code != "UNAVAILABLE" or failures > _RETRIES:
                        self._set_lost(exc)
                        return
                    await asyncio.sleep(0.1 * failures)  # resumed from the offsets
        finally:
            for reader in (self.stdout, self.stderr):
                if not reader.at_eof():
                    reader.feed_eof()

    async def _watch_exit(self) -> None:
        failures = 0
        while not self.exited:
            try:
                chunks = self._streams.output(
                    self.process_id, follow=True, stdout_offset=_FAR, stderr_offset=_FAR
                )
                async with contextlib.aclosing(chunks):
                    async for chunk in chunks:
                        if chunk.exit is not None:
                            self._set_exit(chunk.exit)
                if not self.exited:  # ended without the exit message: ask
                    self._set_exit(await self._control.get_process(self.process_id))
                    failures = 0
                    if not self.exited:
                        await asyncio.sleep(0.1)
            except GuestError as exc:
                failures += 1
                if exc.code != "UNAVAILABLE" or failures > _RETRIES:
                    self._set_lost(exc)
                    return
                await asyncio.sleep(0.1 * failures)


if TYPE_CHECKING:

    def _is_managed(proc: RemoteProcess) -> ManagedProcess:
        return proc  # mypy: a RemoteProcess is a ManagedProcess
