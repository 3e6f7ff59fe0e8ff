"""The docker CLI, run through the process layer: a time limit, bounded output, never a
blocking wait on the event loop.

Every call is one short ``docker`` process (its own process group, no job marker: the
CLI is the harness's helper, not the job's), with the harness's environment, so
``DOCKER_HOST``, ``DOCKER_CONTEXT`` and the CLI's config work as for a user's own calls.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass

from axis_eval.execute.process import ProcessSpec, SpawnFailed, spawn

__all__ = [
    "DockerCallFailed",
    "DockerResult",
    "docker_binary",
    "run_docker",
]

OUTPUT_CAP = 4 * 1024 * 1024
"""At most this much of a call's stdout is kept (``docker ps`` of a busy daemon); stderr
keeps its last 64 KiB."""
_STDERR_CAP = 64 * 1024


class DockerCallFailed(Exception):
    """The docker CLI could not be run, or did not finish in time."""


@dataclass(frozen=True)
class DockerResult:
    """What one ``docker`` call printed and how it exited."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def reason(self) -> str:
        """The last line docker printed on stderr (its error), else the exit code."""
        lines = [
            line
            for line in self.stderr.strip().splitlines()
            if line.strip() and not line.startswith(("Run 'docker", "See 'docker"))
        ]
        return lines[-1].strip() if lines else f"exit code {self.returncode}"


def docker_binary() -> str | None:
    """The ``docker`` CLI on PATH, or None."""
    return shutil.which("docker")


async def _read(reader: asyncio.StreamReader, cap: int, keep_tail: bool) -> bytes:
    buf = bytearray()
    while chunk := await reader.read(64 * 1024):
        if keep_tail:
            buf += chunk
            if len(buf) > 2 * cap:
                del buf[:-cap]
        elif len(buf) < cap:
            buf += chunk[: cap - len(buf)]
    return bytes(buf[-cap:] if keep_tail else buf)


async def run_docker(
    args: Sequence[str],
    *,
    timeout_s: float = 60.0,
    binary: str | None = None,
    env: dict[str, str] | None = None,
) -> DockerResult:
    """Run ``docker <args>`` and wait for it (at most ``timeout_s``).

    Raises:
        DockerCallFailed: no docker CLI, it cannot start, or it ran past ``timeout_s``
            (it is then killed).
    """
    program = binary or docker_binary()
    if program is None:
        raise DockerCallFailed("the docker CLI is not installed (Debian package docker.io)")
    spec = ProcessSpec([program, *args], "/", dict(os.environ if env is None else env), None)
    try:
        proc = await spawn(spec)
    except SpawnFailed as exc:
        raise DockerCallFailed(f"cannot run {program}: {exc}") from exc
    out = asyncio.ensure_future(_read(proc.stdout, OUTPUT_CAP, keep_tail=False))
    err = asyncio.ensure_future(_read(proc.stderr, _STDERR_CAP, keep_tail=True))
    try:
        try:
            code = await asyncio.wait_for(proc.wait(), timeout_s)
        except TimeoutError as exc:
            shown = " ".join(args[:2])
            message = f"`docker {shown}` did not finish within {timeout_s:g}s"
            raise DockerCallFailed(message) from exc
        await proc.drain()
        stdout, stderr = await asyncio.gather(out, err)
    finally:
        out.cancel()  # no-ops once they are done; else they end with the pipes
        err.cancel()
        await asyncio.shield(proc.stop(0.2))
    return DockerResult(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))
