"""``ax-task-runner --guest-services-only``: PID 1 serving the guest services, nothing else.

For a harness that drives the container itself through the guest services (axis-eval's
``docker`` sandbox starts every job's container so): no Task, no Workspaces, no command.
The runner does its PID-1 duties (stop signals, orphans), makes the workspace folder
(``--workspace-root``: the default cwd of guest processes and the root of relative file
paths), and serves on its Unix socket or port what the Task path serves with
``spec.debug: true``: the same :class:`~ax_task_runner.guest_grpc.GuestServices`, given the
same context (``--guest-env``, ``--files-root``, ``--no-confine-files``), with ``/healthz``,
``/readyz`` (ready: there is nothing to prepare) and ``/metadata/.../status``; the Task and
Workspaces metadata answer 404 as they do without a Task. On SIGTERM or SIGINT it stops
the guest processes, closes and exits 0; it writes no state to the workspace.

Why a mode of its own: on the Task path pydantic and the spec models load before the
runner listens, most of its start-up, and this path never imports them; and it listens
only once the guest services are loaded (hyper-h2, protobuf, the method table, the
process-control package), where the Task path attaches them after listening and loads
the rest on the first calls. So the socket file appearing means the first call is
answered at once: a harness waits for the file, with no probing and back-off. Measured in
the agent image on a 2-core machine: 0.30-0.41 s of the runner's CPU before the Task
path's socket appears (the first calls' imports still to come), 0.18-0.27 s here with
them done (docs/benchmarks.md, "Docker start").
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ax_task_runner.errors import RunnerError
from ax_task_runner.logs import event
from ax_task_runner.options import options_from_env
from ax_task_runner.server import GuestContext, MetadataServer, ServerState, metadata_url
from ax_task_runner.supervisor import OrphanReaper, become_subreaper, on_stop_signals

if TYPE_CHECKING:
    from ax_task_runner.guest_grpc import GuestServices

__all__ = ["GuestOnlyOptions", "guest_only_options", "main_guest_only", "serve_guest_only"]

log = logging.getLogger(__name__)

_GUEST_ENVS = ("runner", "empty")


@dataclass(frozen=True)
class GuestOnlyOptions:
    """The options this mode uses; the defaults are ``RunnerConfig``'s (a test keeps them
    equal: pydantic is not loaded here)."""

    unix_socket: str | None = None
    host: str | None = None
    port: int = 80
    workspace_root: str = "/workspace"
    files_roots: list[str] = field(default_factory=list)
    confine_files: bool = True
    guest_env: str = "runner"
    stop_grace_s: float = 10.0


_FIELDS = (
    "unix_socket",
    "host",
    "port",
    "workspace_root",
    "files_roots",
    "confine_files",
    "guest_env",
    "stop_grace_s",
)


def guest_only_options(flags: Mapping[str, Any], environ: Mapping[str, str]) -> GuestOnlyOptions:
    """Flags over option variables, as on the Task path (``RunnerConfig``'s rules for the
    values this mode uses).

    Raises:
        RunnerError: a Task or Workspaces are given through the environment
            (``AX_TASK_YAML``, ``AX_WORKSPACES_YAML``), or a value is out of range.
    """
    for variable in ("AX_TASK_YAML", "AX_WORKSPACES_YAML"):
        if environ.get(variable, "").strip():
            raise RunnerError(f"--guest-services-only serves no Task: {variable} is set")
    values, warnings = options_from_env(environ)
    for warning in warnings:
        event(log, logging.WARNING, warning)
    values.update({k: v for k, v in flags.items() if v is not None})
    chosen = {k: values[k] for k in _FIELDS if k in values}
    problems = []
    port = chosen.get("port", 80)
    if not 0 <= port <= 65535:
        problems.append("port: Input should be between 0 and 65535")
    if chosen.get("stop_grace_s", 0.0) < 0:
        problems.append("stop_grace_s: Input should be greater than or equal to 0")
    if chosen.get("guest_env", "runner") not in _GUEST_ENVS:
        problems.append("guest_env: Input should be 'runner' or 'empty'")
    if problems:
        raise RunnerError(f"invalid option: {'; '.join(problems)}")
    if "files_roots" in chosen:
        chosen["files_roots"] = list(chosen["files_roots"])
    return GuestOnlyOptions(**chosen)


async def serve_guest_only(options: GuestOnlyOptions, *, stop: asyncio.Event | None = None) -> int:
    """Serve until SIGTERM or SIGINT (or until ``stop`` is set; signals are then left to
    the caller); 0 after a clean stop.

    Raises:
        RunnerError: the workspace folder cannot be made, or the server cannot listen.
    """
    stopping = stop if stop is not None else asyncio.Event()
    undo = None
    if stop is None:

        def on_signal(sig: signal.Signals) -> None:
            if not stopping.is_set():
                event(log, logging.INFO, "received signal; stopping", signal=sig.name)
            stopping.set()

        undo = on_stop_signals(on_signal)
    if os.getpid() != 1:
        become_subreaper()
    reaper = OrphanReaper()
    reaper.start()
    server: MetadataServer | None = None
    guest: GuestServices | None = None
    try:
        workspace = os.path.normpath(os.path.abspath(options.workspace_root))
        try:
            os.makedirs(workspace, exist_ok=True)
        except OSError as exc:
            raise RunnerError(f"cannot make {workspace}: {exc.strerror or exc}") from exc
        event(
            log,
            logging.INFO,
            "initializing AX task runner (guest services only)",
            port=options.port,
            wsPath=workspace,
        )
        state = ServerState(workspace_ready=True)
        server = MetadataServer(state, readiness="workspace")
        env: dict[str, str] = {}  # guest processes' base: filled once the address is known
        context = GuestContext(
            True,
            workspace,
            env,
            state.activity,
            server.respond_h2,
            file_roots=tuple(options.files_roots),
            confine_files=options.confine_files,
        )
        from ax_task_runner.guest_grpc import make_h2c_handler

        guest = make_h2c_handler(context)
        guest.preload()
        server.h2c_handler = guest
        port: int | None = None
        if options.unix_socket:
            await server.start_unix(options.unix_socket)
            addr = f"unix:{options.unix_socket}"
        else:
            port = await server.start(options.host, options.port)
            addr = f"{options.host or ''}:{port}"
        os.environ["AX_METADATA_URL"] = metadata_url(options.unix_socket, options.host, port)
        if options.guest_env == "runner":
            env.update(os.environ)
        event(log, logging.INFO, "metadata and guest server started", addr=addr)
        event(log, logging.INFO, "guest services enabled (--guest-services-only)")
        await stopping.wait()
        return 0
    finally:
        if guest is not None:
            try:
                await asyncio.wait_for(guest.aclose(), options.stop_grace_s + 5)
            except Exception as exc:
                event(
                    log,
                    logging.WARNING,
                    "guest services did not close cleanly",
                    error=f"{type(exc).__name__}: {exc}",
                )
        if server is not None:
            event(log, logging.INFO, "shutting down metadata server")
            await server.close()
        await reaper.stop()
        if undo is not None:
            undo()


def main_guest_only(flags: Mapping[str, Any]) -> int:
    """What ``ax-task-runner --guest-services-only`` does after parsing its flags."""
    from ax_task_runner.entry import run_entry

    return run_entry(lambda: serve_guest_only(guest_only_options(flags, os.environ)), log)
