"""Flow control between the supervisor's counting pump and an agent's output reader.

The pump (``execute/supervise.py``) reads the agent's stdout, counts it against
``limits.output.bytes`` and feeds the adapter's reader; this transport lets the reader's
stream pause the pump, so a flooding agent waits on its own pipe instead of the harness
buffering what it prints.
"""

from __future__ import annotations

import asyncio

__all__ = ["PumpFlow"]


class PumpFlow(asyncio.ReadTransport):
    """The pump's side of the reader's stream: the stream pauses it while its buffer holds
    more than twice its limit (as a pipe's transport is paused), and resumes it below."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()
        self.ready.set()
        self.gone = False
        """The reader is done: what still comes is counted, not handed on."""

    def pause_reading(self) -> None:
        self.ready.clear()

    def resume_reading(self) -> None:
        self.ready.set()

    def is_reading(self) -> bool:
        return self.ready.is_set()

    def reader_done(self, *_: object) -> None:
        self.gone = True
        self.ready.set()
