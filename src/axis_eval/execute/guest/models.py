"""What the guest client hands back: a process's state, output chunks, and its one error.

Standard library only: importing these loads neither grpclib nor protobuf.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

__all__ = ["GuestError", "OutputChunk", "ProcessState", "returncode_of"]


class GuestError(Exception):
    """A guest call failed: ``code`` is the gRPC status name (``NOT_FOUND``,
    ``FAILED_PRECONDITION``, ``UNAVAILABLE`` when the runner cannot be reached or the
    connection was lost, ``DEADLINE_EXCEEDED`` when it did not answer in time...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def returncode_of(exit_code: int) -> int:
    """asyncio's convention from the runner's: the runner reports a process killed by
    signal ``n`` as ``128 + n`` (the proto has no separate field), so 129..192 read as
    ``-n``. A process that itself exits with such a code reads the same way, as a shell's
    ``$?`` would tell it."""
    signum = exit_code - 128
    return -signum if 0 < signum < signal.NSIG else exit_code


@dataclass(frozen=True)
class ProcessState:
    """A guest process as the runner last reported it."""

    process_id: str
    running: bool
    exit_code: int | None
    """The runner's exit status (``128 + n`` for a death by signal ``n``); None while
    running."""
    pid: int
    """Its pid inside the guest (not a pid of this host)."""

    @property
    def returncode(self) -> int | None:
        """:attr:`exit_code` in asyncio's convention (negative signal number), see
        :func:`returncode_of`."""
        return None if self.exit_code is None else returncode_of(self.exit_code)


@dataclass(frozen=True)
class OutputChunk:
    """One message of a process's output stream: stdout or stderr bytes, or (the last
    message) ``exit``, the exited process."""

    stdout: bytes
    stderr: bytes
    exit: ProcessState | None
