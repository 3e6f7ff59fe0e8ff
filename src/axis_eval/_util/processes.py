"""One-shot helper processes (Node for ``.js`` configs, ``git``): bounded, grouped, killed whole.

Agent processes are managed by :mod:`axis_eval.execute.process`; this module only runs
short, synchronous helper commands that must finish before the pipeline continues. A
helper runs in its own process group, and however the wait ends (done, timed out, too much
output, Ctrl-C, SIGTERM, any exception) the whole group is killed before its leader is
reaped, so nothing it started outlives it and the group id cannot have been reused.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any, cast

_CHUNK = 65536
_POLL_S = 0.05
"""How often the wait checks whether the helper has exited while its pipes stay open."""


@dataclass(frozen=True)
class Completed:
    """What a finished helper process left behind."""

    returncode: int
    stdout: str
    stderr: str


class HelperTimeout(Exception):
    """The helper process ran past its time limit and was killed with its group."""


class HelperOutputTooLarge(Exception):
    """The helper wrote more than ``max_output_bytes`` to stdout and was killed with its group."""


class HelperStopped(Exception):
    """SIGTERM arrived while waiting (with ``stop_on_signals``); the group was killed.

    SIGINT raises ``KeyboardInterrupt`` instead, as Python does everywhere else.
    """

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"stopped by {signal_name}")
        self.signal_name = signal_name


def run_helper(
    argv: list[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    max_output_bytes: int | None = None,
    stop_on_signals: bool = False,
) -> Completed:
    """Run ``argv`` in its own process group and wait; the whole group is killed at the end.

    Args:
        env: the helper's whole environment (default: this process's).
        timeout_s: past this the group is killed and :class:`HelperTimeout` raised.
        max_output_bytes: more stdout than this kills the group and raises
            :class:`HelperOutputTooLarge`; stderr past it is dropped. None: no cap.
        stop_on_signals: while waiting (in the main thread), SIGINT raises
            ``KeyboardInterrupt`` even under a handler that would only set a flag (asyncio's
            cancels its task, which a blocking wait never sees), and SIGTERM, unless
            something already handles it, raises :class:`HelperStopped`. The signals'
            handlers are put back afterwards.
    """
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    late = HelperTimeout(f"{argv[0]} did not finish within {timeout_s:g}s")
    try:
        with _stopping_signals() if stop_on_signals else _nothing():
            out, err = _collect(proc, (deadline, late), max_output_bytes)
            if not _wait_unreaped(proc.pid, deadline):
                raise late
    except BaseException:
        _end(proc)
        raise
    _end(proc)
    return Completed(proc.returncode, _text(out), _text(err))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _collect(
    proc: subprocess.Popen[bytes],
    timeout: tuple[float, HelperTimeout],
    cap: int | None,
) -> tuple[bytes, bytes]:
    """Everything the helper writes until it closes stdout and stderr (or a limit ends it).

    ``timeout`` is the deadline (``time.monotonic``) and what to raise past it.
    """
    deadline, late = timeout
    assert proc.stdout is not None and proc.stderr is not None
    buffers: dict[int, bytearray] = {proc.stdout.fileno(): bytearray()}
    buffers[proc.stderr.fileno()] = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        exited = False
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise late
            ready = selector.select(0 if exited else min(remaining, _POLL_S))
            if exited and not ready:
                break  # the leader is gone and has nothing more: a child it left holding
                # the pipes open (one that left its group, too) does not hold us
            for key, _events in ready:
                stream = cast("IO[bytes]", key.fileobj)
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(stream)
                    continue
                buffer = buffers[key.fd]
                if cap is not None and len(buffer) + len(chunk) > cap:
                    if stream is proc.stdout:
                        raise HelperOutputTooLarge(f"more than {cap} bytes of output")
                    chunk = chunk[: max(0, cap - len(buffer))]
                buffer.extend(chunk)
            exited = exited or _has_exited(proc.pid)
    return bytes(buffers[proc.stdout.fileno()]), bytes(buffers[proc.stderr.fileno()])


def _has_exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited, leaving it a zombie: its pid, and so its
    group's id, stays ours until :func:`_end` reaps it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped elsewhere: nothing left to wait for
        return True


def _wait_unreaped(pid: int, deadline: float) -> bool:
    """Wait (to ``deadline``) for ``pid`` to exit, without reaping it (:func:`_has_exited`)."""
    while not _has_exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill the helper's whole group (its leader not yet reaped), reap it, close the pipes."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with suppress(ChildProcessError):
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _raise_stopped(_signum: int, _frame: FrameType | None) -> None:
    raise HelperStopped("SIGTERM")


@contextmanager
def _stopping_signals() -> Iterator[None]:
    """SIGINT → ``KeyboardInterrupt``; SIGTERM (when it would kill us) → :class:`HelperStopped`."""
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers can only be set in the main thread; the timeout still bounds it
        return
    saved: dict[signal.Signals, Any] = {}
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        saved[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        saved[signal.SIGTERM] = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


class LiveHelper:
    """A long-lived helper (the Node host of a JavaScript adapter) spoken to over pipes.

    Requests go to its stdin, one line each; answers come on a separate pipe (the helper
    gets its descriptor number as ``{reply_fd}`` in ``argv``), so whatever the helper's own
    code prints (to stdout or stderr, both into ``output``) cannot corrupt the protocol. It
    runs in its own process group but in our session (a run's orphan sweep takes children in
    other sessions for an agent's escaped descendants); :meth:`end` kills the whole group.
    The helper should exit
    by itself when its stdin closes, so it cannot outlive us even if we are killed.
    """

    def __init__(self, argv: list[str], *, cwd: str | None, output: IO[bytes]) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [a.replace("{reply_fd}", str(write_fd)) for a in argv],
                cwd=cwd,
                stdin=subprocess.PIPE,
                stdout=output,
                stderr=output,
                pass_fds=(write_fd,),
                process_group=0,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.replies = read_fd
        self._buffer = bytearray()
        assert self.proc.stdin is not None
        self._stdin = self.proc.stdin.fileno()
        os.set_blocking(self._stdin, False)
        self.ended = False

    def send(self, line: bytes, deadline: float) -> bool:
        """Write one request line by ``deadline`` (``time.monotonic``); False: too late or
        the helper is gone."""
        view = memoryview(line + b"\n")
        if self.ended:
            return False
        with selectors.DefaultSelector() as selector:
            selector.register(self._stdin, selectors.EVENT_WRITE)
            while view:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.ended:
                    return False
                if not selector.select(min(remaining, _POLL_S)):
                    continue
                try:
                    view = view[os.write(self._stdin, view) :]
                except BlockingIOError:
                    continue
                except OSError:
                    return False
        return True

    def receive(self, deadline: float) -> bytes | None:
        """The next answer line, or None: the deadline passed, or the helper closed it."""
        if self.ended:
            return None
        with selectors.DefaultSelector() as selector:
            selector.register(self.replies, selectors.EVENT_READ)
            while (end := self._buffer.find(b"\n")) < 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.ended:
                    return None
                if not selector.select(min(remaining, _POLL_S)):
                    continue
                chunk = os.read(self.replies, _CHUNK)
                if not chunk:
                    return None
                self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    async def send_async(self, line: bytes, deadline: float) -> bool:
        """:meth:`send` without blocking the event loop: the write waits in the loop.

        Cancelled mid-line (a request larger than the pipe's buffer), the helper would read
        a broken request: it is ended then, and the cancel goes on."""
        view = memoryview(line + b"\n")
        total = len(view)
        try:
            while view:
                if self.ended:
                    return False
                try:
                    view = view[os.write(self._stdin, view) :]
                    continue
                except BlockingIOError:
                    pass
                except OSError:
                    return False
                if not await self._ready(self._stdin, deadline, write=True):
                    return False
        except BaseException:
            if 0 < len(view) < total:  # part of it went: the stream is broken
                self.end()
            raise
        return True

    async def receive_async(self, deadline: float) -> bytes | None:
        """:meth:`receive` without blocking the event loop: the read waits in the loop."""
        while (end := self._buffer.find(b"\n")) < 0:
            if self.ended or not await self._ready(self.replies, deadline, write=False):
                return None
            try:
                chunk = os.read(self.replies, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                return None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line

    async def _ready(self, fd: int, deadline: float, *, write: bool) -> bool:
        """Wait in the event loop until ``fd`` is ready; False: the deadline passed first
        (or the helper was ended meanwhile). The descriptor is unwatched however it ends,
        a cancel included, so it is never watched once closed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0 or self.ended:
            return False
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        if write:
            loop.add_writer(fd, wake)
        else:
            loop.add_reader(fd, wake)
        try:
            await asyncio.wait_for(ready, remaining)
        except TimeoutError:
            return False
        finally:
            if write:
                loop.remove_writer(fd)
            else:
                loop.remove_reader(fd)
        return not self.ended

    def returncode(self) -> int | None:
        return self.proc.poll()

    def end(self) -> None:
        """Kill the helper's whole group, reap it, close the pipes (idempotent)."""
        if self.ended:
            return
        self.ended = True
        reaped = self.proc.returncode is not None
        if not reaped:
            try:
                os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                # Reaped elsewhere (a run's orphan reaper takes unclaimed zombies): its pid
                # may be reused by now, so nothing is signalled; only the pipes are closed.
                self.proc.returncode = 0
                reaped = True
        if not reaped:
            _end(self.proc)
        else:
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    with suppress(OSError):
                        stream.close()
        with suppress(OSError):
            os.close(self.replies)
