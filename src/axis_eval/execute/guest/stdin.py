"""A guest process's stdin as an :class:`asyncio.StreamWriter` over WriteProcessInput.

The writer is asyncio's own, on a transport whose bytes go out on one long
WriteProcessInput call: ``write()`` buffers, ``drain()`` waits while more than
:data:`HIGH_WATER` bytes are queued (the process is not reading: the call's HTTP/2 window
is full), ``close()`` sends ``close`` after what is queued, ``wait_closed()`` waits for the
runner's answer. When the call fails (the process closed its stdin or exited, the
connection went away), the writer behaves as a pipe whose reader is gone: ``drain()``
raises :class:`ConnectionResetError`, ``wait_closed()`` :class:`BrokenPipeError`.
"""

from __future__ import annotations

import asyncio
import errno
from typing import TYPE_CHECKING, Any

from axis_eval.execute.guest.models import GuestError

if TYPE_CHECKING:
    from axis_eval.execute.guest._rpc import Rpc

__all__ = ["HIGH_WATER", "InputTransport", "input_writer"]

HIGH_WATER = 256 * 1024
LOW_WATER = 64 * 1024
_PIECE_BYTES = 1024 * 1024


class InputTransport(asyncio.WriteTransport):
    """The write side of a guest process's stdin (see the module docstring)."""

    def __init__(self, rpc: Rpc, process_id: str) -> None:
        super().__init__({"process_id": process_id})
        self._rpc = rpc
        self._process_id = process_id
        self._buffer = bytearray()
        self._high, self._low = HIGH_WATER, LOW_WATER
        self._closing = False
        self._lost = False
        self._paused = False
        self._wake = asyncio.Event()
        # asyncio's stream protocol gives the writer drain() and wait_closed(); it reads
        # nothing here (its reader is a throw-away).
        self.protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader())
        self.protocol.connection_made(self)
        self._task = asyncio.get_running_loop().create_task(self._run())

    # -- asyncio.WriteTransport

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing and not self._lost:
            raise RuntimeError("stdin is closed")
        if self._lost or not data:
            return  # like a pipe transport after the reader went away: dropped
        self._buffer += data
        self._wake.set()
        if not self._paused and len(self._buffer) > self._high:
            self._paused = True
            self.protocol.pause_writing()

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.close()

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._wake.set()

    def is_closing(self) -> bool:
        return self._closing or self._lost

    def abort(self) -> None:
        self._closing = True
        self._task.cancel()

    def get_write_buffer_size(self) -> int:
        return len(self._buffer)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low, self._high

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = HIGH_WATER if high is None else high
        self._low = min(self._high, self._high // 4 if low is None else low)

    # -- the call

    async def _next_piece(self) -> tuple[bytes, bool] | None:
        while not self._buffer and not self._closing:
            self._wake.clear()
            await self._wake.wait()
        data = bytes(self._buffer[:_PIECE_BYTES])
        del self._buffer[: len(data)]
        if self._paused and len(self._buffer) <= self._low:
            self._paused = False
            self.protocol.resume_writing()
        return data, self._closing and not self._buffer

    async def _run(self) -> None:
        lost: Exception | None = None
        try:
            await self._rpc.feed_input(self._process_id, self._next_piece)
        except GuestError as exc:
            lost = BrokenPipeError(errno.EPIPE, f"stdin of guest process: {exc}")
        except asyncio.CancelledError:
            lost = BrokenPipeError(errno.EPIPE, "stdin of guest process: aborted")
        except Exception as exc:  # never an unretrieved task error: the writer reports it
            lost = BrokenPipeError(errno.EPIPE, f"stdin of guest process: {exc!r}")
        finally:
            self._lost = True
            self._buffer.clear()
            self.protocol.connection_lost(lost)


def input_writer(rpc: Rpc, process_id: str) -> tuple[asyncio.StreamWriter, InputTransport]:
    """A StreamWriter for the stdin of ``process_id`` (started with ``stdin=True``)."""
    transport = InputTransport(rpc, process_id)
    loop: Any = asyncio.get_running_loop()
    return asyncio.StreamWriter(transport, transport.protocol, None, loop), transport
