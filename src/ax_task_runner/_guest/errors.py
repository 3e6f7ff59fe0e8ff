"""The one error a guest request can fail with, and its two faces (processes, files)."""

from __future__ import annotations

from typing import Literal

__all__ = ["ErrorKind", "FileError", "GuestError", "ProcessError"]

ErrorKind = Literal["not_found", "invalid", "precondition", "permission"]
"""What went wrong, in words the gRPC layer maps to a status code."""


class GuestError(Exception):
    """A guest request cannot be served; ``kind`` maps to a gRPC status."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ProcessError(GuestError):
    """A request about a process cannot be served."""


class FileError(GuestError):
    """A file request cannot be served."""
