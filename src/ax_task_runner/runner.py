"""The runner's lifecycle (upstream's ``runner.Run``): serve, prepare, run, stay up, stop.

1. Listen (``/healthz`` answers from here on), then look for guest services.
2. Prepare every workspace in binding order; ``/readyz`` flips when all are prepared.
3. Run the goals (never holding readiness back), then start ``spec.command``.
4. Log the command's exit and keep serving until SIGTERM/SIGINT (or ``stop()``).
5. Stop: SIGTERM the command's group, grace, SIGKILL; flush state to the volume; exit 0.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import logging
import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ax_task_runner.config import RunnerConfig
from ax_task_runner.errors import RunnerError
from ax_task_runner.files import write_atomic
from ax_task_runner.git import GitFetcher
from ax_task_runner.logs import event, is_secret_name, redactor
from ax_task_runner.prepare import (
    DURABLE_DIR,
    GoalSettings,
    Markers,
    bootstrap_goal,
    prepare_workspace,
    resolve_mounts,
)
from ax_task_runner.server import (
    GuestContext,
    H2cHandler,
    MetadataServer,
    ServerState,
    metadata_url,
)
from ax_task_runner.spec import dump_task, dump_workspaces
from ax_task_runner.supervisor import (
    Command,
    CommandExit,
    OrphanReaper,
    SpawnError,
    become_subreaper,
    on_stop_signals,
)

__all__ = ["GUEST_MODULE", "Runner", "run", "run_async"]

log = logging.getLogger(__name__)

GUEST_MODULE = "ax_task_runner.guest_grpc"
"""Where the guest services live; its ``make_h2c_handler(GuestContext)`` is the seam."""
_GOAL_STOP_S = 5.0


async def _call(hook: Any, arg: Any) -> None:
    if hook is not None:
        result = hook(arg)
        if inspect.isawaitable(result):
            await result


class Runner:
    """One run of the task runner. ``await runner.run()`` blocks until stopped.

    Hooks (``before_serve``, ``after_serve``, ``on_ready``) get this object:
    :attr:`port`, :attr:`metadata_url`, :attr:`workspace`, :attr:`env` and :attr:`state`
    are there to read.
    """

    def __init__(self, config: RunnerConfig) -> None:
        self.config = config
        resolved = resolve_mounts(config.task, config.workspaces, config.workspace_root)
        self.mounts = resolved.value
        self._warnings = resolved.warnings
        task = config.task
        self.spec_env: dict[str, str] = {
            e.name: e.value for e in (task.spec.env if task else []) if e.name
        }
        redactor.add_environment(os.environ)
        redactor.add_environment(self.spec_env)
        matched = [m.workspace for m in self.mounts if m.workspace is not None]
        self.state = ServerState(
            task_yaml=redactor(dump_task(task, is_secret=is_secret_name)) if task else None,
            workspaces_yaml=redactor(dump_workspaces(matched)) if matched else None,
        )
        self.port: int | None = None
        self.env: dict[str, str] = {}
        """The command's environment (filled in once the server listens)."""
        self.command_exit: CommandExit | None = None
        self.ready = asyncio.Event()
        """Set once every workspace is prepared."""
        self._stop = asyncio.Event()
        self._goal_cancel = asyncio.Event()
        self._goal_running = False
        self._command: Command | None = None
        self._server: MetadataServer | None = None
        self._signal: str | None = None
        self._guest_closed = False

    @property
    def workspace(self) -> str:
        """The first workspace: the command's working directory."""
        return self.mounts[0].path

    @property
    def metadata_url(self) -> str:
        """``AX_METADATA_URL`` (:func:`~ax_task_runner.server.metadata_url`)."""
        return metadata_url(self.config.unix_socket, self.config.host, self.port)

    def stop(self) -> None:
        """Ask the runner to stop, as SIGTERM does."""
        self._stop.set()

    def _on_signal(self, sig: signal.Signals) -> None:
        if not self._stop.is_set():
            self._signal = sig.name
            event(log, logging.INFO, "received signal; stopping", signal=sig.name)
        self._stop.set()

    async def run(self, *, handle_signals: bool = True) -> int:
        """Serve and supervise until stopped; 0 after a clean stop.

        Raises:
            RunnerError: the server cannot listen.
        """
        cfg = self.config
        undo = on_stop_signals(self._on_signal) if handle_signals else None
        reaper: OrphanReaper | None = None
        if cfg.reap_orphans:
            if os.getpid() != 1:
                become_subreaper()
            reaper = OrphanReaper()
            reaper.start()
        tasks: list[asyncio.Task[None]] = []
        try:
            for warning in self._warnings:
                event(log, logging.WARNING, warning)
            event(
                log,
                logging.INFO,
                "initializing AX task runner",
                port=cfg.port,
                wsPath=self.workspace,
                workspaces=[m.path for m in self.mounts],
            )
            await self._hook("before_serve", cfg.before_serve)
            self._server = MetadataServer(
                self.state, readiness=cfg.readiness, h2c_handler=cfg.h2c_handler
            )
            if cfg.unix_socket:
                await self._server.start_unix(cfg.unix_socket)
                addr = f"unix:{cfg.unix_socket}"
            else:
                self.port = await self._server.start(cfg.host, cfg.port)
                addr = f"{cfg.host or ''}:{self.port}"
            self._set_env()
            event(
                log,
                logging.INFO,
                "metadata and guest server started",
                addr=addr,
                readiness=cfg.readiness,
            )
            await self._hook("after_serve", cfg.after_serve)
            loop = asyncio.get_running_loop()
            if cfg.h2c_handler is None:
                tasks.append(loop.create_task(self._attach_guest()))
            else:
                self._log_guest(True)
            main = loop.create_task(self._lifecycle())
            tasks.append(main)
            await self._stop.wait()
            await self._shutdown(main)
            return 0
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close_guest()
            if self._server is not None:
                event(log, logging.INFO, "shutting down metadata server")
                await self._server.close()
            if reaper is not None:
                await reaper.stop()
            if undo is not None:
                undo()

    async def _hook(self, name: str, hook: Any) -> None:
        try:
            await _call(hook, self)
        except Exception as exc:
            raise RunnerError(f"{name} hook failed: {type(exc).__name__}: {exc}") from exc

    def _set_env(self) -> None:
        url = self.metadata_url
        if self.config.export_env:
            os.environ["AX_METADATA_URL"] = url
            os.environ.update(self.spec_env)
        self.env.clear()
        self.env.update({**os.environ, "AX_METADATA_URL": url, **self.spec_env})

    def _log_guest(self, available: bool) -> None:
        debug = bool(self.config.task and self.config.task.spec.debug)
        if debug and available:
            event(log, logging.INFO, "guest services enabled (spec.debug is true)")
        elif debug:
            event(
                log,
                logging.WARNING,
                "spec.debug is true but guest services are not "
                "available in this build; h2c connections are closed",
            )
        else:
            event(
                log,
                logging.INFO,
                "guest services disabled; set spec.debug: true on the Task to enable ax ssh",
            )

    async def _attach_guest(self) -> None:
        """Import the guest services (after serving: grpc is slow to import) and mount them."""
        handler: H2cHandler | None = None
        try:
            module = await asyncio.to_thread(importlib.import_module, GUEST_MODULE)
            factory = getattr(module, "make_h2c_handler", None)
            if factory is not None:
                debug = bool(self.config.task and self.config.task.spec.debug)
                fallback = self._server.respond_h2 if self._server is not None else None
                cfg = self.config
                context = GuestContext(
                    debug,
                    self.workspace,
                    {} if cfg.guest_env == "empty" else self.env,
                    self.state.activity,
                    fallback,
                    file_roots=tuple(cfg.files_roots),
                    confine_files=cfg.confine_files,
                )
                handler = factory(context)
        except ModuleNotFoundError as exc:
            if exc.name != GUEST_MODULE:
                event(log, logging.WARNING, "guest services cannot load", error=str(exc))
        except Exception as exc:
            event(
                log,
                logging.ERROR,
                "guest services failed to start",
                error=f"{type(exc).__name__}: {exc}",
            )
        if handler is not None and self._server is not None:
            self._server.h2c_handler = handler
        self._log_guest(handler is not None)

    async def _close_guest(self) -> None:
        """Let the h2c handler stop what it started (its optional ``aclose()``)."""
        handler = self._server.h2c_handler if self._server is not None else None
        closer = getattr(handler, "aclose", None)
        if closer is None or self._guest_closed:
            return
        self._guest_closed = True
        try:
            await asyncio.wait_for(closer(), self.config.stop_grace_s + 5)
        except Exception as exc:
            event(
                log,
                logging.WARNING,
                "guest services did not close cleanly",
                error=f"{type(exc).__name__}: {exc}",
            )

    async def _lifecycle(self) -> None:
        try:
            await self._prepare()
            await self._goals()
            if not self._stop.is_set():  # stopping during a goal: no command this boot
                await self._run_command()
        except asyncio.CancelledError:
            raise
        except Exception:  # PID 1 stays up: log the bug and keep serving
            log.exception("task runner lifecycle failed; serving until stopped")

    async def _prepare(self) -> None:
        cfg = self.config
        markers = Markers(cfg.state_dir, cfg.workspace_root)
        fetcher = GitFetcher(
            env=self.env,
            state_dir=cfg.state_dir,
            attempts=cfg.git_attempts,
            delay_s=cfg.git_retry_delay_s,
        )
        self.state.busy = True
        ready = True
        try:
            for mount in self.mounts:
                ok = await prepare_workspace(mount, env=self.env, markers=markers, fetcher=fetcher)
                ready = ready and ok
        finally:
            self.state.busy = False
        if not ready:
            event(log, logging.ERROR, "a workspace could not be prepared; /readyz stays 503")
            return
        self.state.workspace_ready = True
        self.ready.set()
        event(log, logging.INFO, "workspace maiden run setup marked ready", count=len(self.mounts))
        try:
            await _call(cfg.on_ready, self)
        except Exception:
            log.exception("on_ready hook failed")

    async def _goals(self) -> None:
        cfg = self.config
        settings = GoalSettings(
            cfg.goal_agent, cfg.bootstrap_timeout_s, cfg.goal_model, cfg.goal_endpoint
        )
        markers = Markers(cfg.state_dir, cfg.workspace_root)
        for mount in self.mounts:
            if not mount.goal or not Path(mount.path).is_dir():
                continue
            self.state.busy = self._goal_running = True
            try:
                await bootstrap_goal(
                    mount,
                    env=self.env,
                    markers=markers,
                    settings=settings,
                    cancel=self._goal_cancel,
                )
            finally:
                self.state.busy = self._goal_running = False
            if self._goal_cancel.is_set():
                return

    async def _run_command(self) -> None:
        task = self.config.task
        argv = list(task.spec.command) if task else []
        if not argv:
            event(log, logging.INFO, "no task command specified; serving metadata until stopped")
            return
        command = Command(argv, cwd=self.workspace, env=dict(self.env))
        try:
            pid = await command.start()
        except SpawnError as exc:
            event(
                log,
                logging.ERROR,
                "task command failed to start; serving until stopped",
                command=argv,
                error=str(exc),
            )
            await self._report(CommandExit(None, exc.exit_code, None, str(exc)))
            return
        self._command = command
        event(log, logging.INFO, "started task command", pid=pid, command=argv)
        await self._report(await command.wait())

    async def _report(self, exit: CommandExit) -> None:
        if self.command_exit is not None:
            return
        self.command_exit = exit
        self.state.exited = True
        self.state.exit_code = exit.exit_code
        if exit.error is None:
            event(log, logging.INFO, "task command completed successfully", pid=exit.pid)
        else:
            event(
                log,
                logging.ERROR,
                "task command exited with error",
                pid=exit.pid,
                exitCode=exit.exit_code,
                error=exit.error,
            )
        try:
            await _call(self.config.on_command_exit, exit)
        except Exception:
            log.exception("on_command_exit hook failed")

    async def _shutdown(self, main: asyncio.Task[None]) -> None:
        self._goal_cancel.set()
        if self._goal_running:  # let the goal agent stop through its own grace first
            await asyncio.wait({main}, timeout=_GOAL_STOP_S)
        main.cancel()
        await asyncio.gather(main, return_exceptions=True)
        command = self._command
        if command is not None and command.pid is not None:
            exit = await command.stop(self.config.stop_grace_s)
            await self._report(exit)
        await self._close_guest()  # guest processes may still write to the volume
        try:
            await asyncio.to_thread(self._flush)
        except OSError as exc:
            event(log, logging.WARNING, "cannot flush state to the volume", error=str(exc))

    def _flush(self) -> None:
        """Write the runner's last state to the durable volume and sync filesystems."""
        exit = self.command_exit
        state: dict[str, Any] = {
            "stoppedAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
            "signal": self._signal,
            "workspaceReady": self.state.workspace_ready,
            "command": None
            if exit is None
            else {"exitCode": exit.exit_code, "signal": exit.signal, "error": exit.error},
        }
        folder = Path(self.config.workspace_root) / DURABLE_DIR
        write_atomic(folder / "runner-state.json", json.dumps(state, indent=2) + "\n", durable=True)
        os.sync()


async def run_async(config: RunnerConfig, *, stop: asyncio.Event | None = None) -> int:
    """Run the task runner until stopped; 0 after a clean stop (upstream's ``runner.Run``).

    Without ``stop``, SIGTERM and SIGINT stop it (handlers are installed on the running
    loop); with ``stop``, setting that event does, and signals are left to the caller.

    Raises:
        RunnerError: the server cannot listen, or a ``before_serve``/``after_serve`` hook
            raised (chained).
    """
    runner = Runner(config)
    if stop is None:
        return await runner.run()
    watcher = asyncio.get_running_loop().create_task(stop.wait())
    watcher.add_done_callback(lambda _: runner.stop())
    try:
        return await runner.run(handle_signals=False)
    finally:
        watcher.cancel()


def run(config: RunnerConfig) -> int:
    """:func:`run_async` on a new event loop (for a program's ``main``)."""
    return asyncio.run(run_async(config))
