"""The guest-service client: drive a runner's processes and files over gRPC.

A runner (``ax-task-runner`` with ``spec.debug: true``: PID 1 of a job's container, a pod,
or a process on this host) serves the Agent Substrate guest API ``ateenv.v1alpha``:
ProcessService and FileSystemService, over h2c on a Unix socket or a TCP port. This is
the harness's side of it::

    async with await GuestClient.connect(unix_socket="/run/job/guest.sock") as guest:
        proc = await guest.spawn(ProcessSpec(argv, cwd, env, marker=None))  # a Spawner
        async for line in proc.stdout: ...
        await proc.stop(grace_s)
        data = await guest.read_file("/tmp/axis-1-1/work/notes.md")

- :mod:`.client`: :class:`GuestClient`, one connection: the seven calls (start, stream,
  stdin, signal, get; read and write files) and :meth:`GuestClient.spawn`.
- :mod:`.remote`: :class:`RemoteProcess`, a guest process as a
  :class:`~axis_eval.execute.process.ManagedProcess` (bounded output readers, the exit
  reported when it happens, stop by SIGTERM then SIGKILL through the runner).
- :mod:`.stdin`: its stdin as an :class:`asyncio.StreamWriter` over WriteProcessInput.
- :mod:`.models`: :class:`GuestError`, :class:`ProcessState`, :class:`OutputChunk`.
- :mod:`._rpc`: the wire (grpclib, method paths written out, no generated stubs);
  ``guest_pb2`` the messages, generated from ``proto/ateenv/v1alpha/guest.proto`` by
  :mod:`.regen`. The runner serves the same messages.

Names load on first use; grpclib and protobuf load only when a client connects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval.execute.guest.client import GuestClient as GuestClient
    from axis_eval.execute.guest.models import (
        GuestError as GuestError,
        OutputChunk as OutputChunk,
        ProcessState as ProcessState,
        returncode_of as returncode_of,
    )
    from axis_eval.execute.guest.remote import RemoteProcess as RemoteProcess

_EXPORTS = {
    "client": ("GuestClient",),
    "models": ("GuestError", "OutputChunk", "ProcessState", "returncode_of"),
    "remote": ("RemoteProcess",),
}
_HOME = {name: f".{module}" for module, names in _EXPORTS.items() for name in names}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOME)
