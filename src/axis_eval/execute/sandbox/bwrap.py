"""``bwrap``: each command of a job in its own bubblewrap namespaces.

What a confined process sees (``docs/sandboxes.md``):

- the host's folders read-only; a private ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (in
  memory, bounded), a private read-only ``/run`` and ``/dev``, and ``/proc`` (its own PID
  namespace: no host process, the harness included, is visible);
- hidden (empty read-only folders): the parent's HOME, ``/home`` and ``/root``, and the
  folders the run names (the project's ``.axis``: other runs' reports);
- read-only again inside those: the config folder, the agent CLIs and their runtime (the
  folders of ``PATH``, Python's prefix);
- writable: the job's own folder (workspace, HOME, TMPDIR, the phases' notes).

Own PID, IPC and UTS namespaces, a new session, no capabilities, and ``--die-with-parent``:
when the command's leader exits, or the harness dies, the namespace goes and takes every
process in it along, whatever they did to their environment. Stopping a command needs no
``/proc`` scan: SIGTERM to the command's group inside the namespace, the grace period, then
SIGKILL to bwrap, which ends the namespace.

Setup, teardown and check commands run under the same profile as the agent, each in a
namespace of its own: what a setup command leaves running in the background ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import stat
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from axis_eval.config.sandbox import SandboxKind, SandboxPolicy
from axis_eval.execute.process import (
    AgentProcess,
    ManagedProcess,
    ProcessSpec,
    Spawner,
    SpawnFailed,
    spawn,
)
from axis_eval.execute.process.kill import KILL_LIMIT_S, signal_group
from axis_eval.execute.sandbox.bwrap_mounts import BwrapMounts, bwrap_args
from axis_eval.execute.sandbox.host import copy_file
from axis_eval.execute.sandbox.probe import bwrap_path
from axis_eval.execute.workspace import JobDirs

__all__ = ["BwrapProcess", "BwrapSandbox", "bwrap_args"]


def _children(pid: int) -> list[int]:
    """The children of ``pid`` (one read of its main thread's ``children`` file)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


class BwrapProcess:
    """A command running under bwrap: the :class:`~axis_eval.execute.process.ManagedProcess`
    the supervisor sees. Its exit is bwrap's, which is the command's (and by then its
    namespace is gone); :meth:`stop` ends the namespace."""

    def __init__(self, outer: AgentProcess, on_stopped: Callable[[BwrapProcess], None]) -> None:
        self._outer = outer
        self._on_stopped = on_stopped
        self._lock = asyncio.Lock()
        self._stopped = False

    @property
    def stdout(self) -> asyncio.StreamReader:
        return self._outer.stdout

    @property
    def stderr(self) -> asyncio.StreamReader:
        return self._outer.stderr

    @property
    def stdin(self) -> asyncio.StreamWriter | None:
        return self._outer.stdin

    @property
    def returncode(self) -> int | None:
        return self._outer.returncode

    @property
    def exited(self) -> bool:
        return self._outer.exited

    @property
    def pid(self) -> int:
        """bwrap's pid (the command is its grandchild, in the namespace)."""
        return self._outer.pid

    def add_exit_callback(self, callback: Callable[[], object]) -> None:
        self._outer.add_exit_callback(callback)

    async def wait(self) -> int:
        return await self._outer.wait()

    def _command_group(self) -> int | None:
        """The host pid of the command bwrap runs (its own session's leader), or None."""
        for init in _children(self._outer.pid):
            for command in _children(init):
                return command
        return None

    async def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM the command's group, up to ``grace_s`` for it to exit, then SIGKILL bwrap,
        which ends the namespace and everything in it. Idempotent."""
        async with self._lock:
            if self._stopped:
                return
            try:
                outer = self._outer
                if not outer.exited:
                    command = self._command_group()
                    if command is not None and grace_s > 0:
                        signal_group(command, signal.SIGTERM)
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(outer.wait(), grace_s)
                    outer.signal(signal.SIGKILL)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(outer.wait(), KILL_LIMIT_S)
                await outer.drain()
            except BaseException:
                self.kill_now()
                raise
            finally:
                self._outer.close_pipes()
            self._stopped = True
            self._on_stopped(self)

    def close_pipes(self) -> None:
        self._outer.close_pipes()

    def kill_now(self) -> None:
        """SIGKILL bwrap at once (its namespace follows); :meth:`stop` is still due."""
        self._outer.signal(signal.SIGKILL)


def _check_program(process: ProcessSpec) -> None:
    """Refuse what bwrap could not start, as a host spawn would (bwrap itself would start
    and exit 1, and the run would read as the agent's failure).

    Raises:
        SpawnFailed: the program is missing (127) or not executable, or the working
            directory is not a folder.
    """
    if not process.argv:
        raise SpawnFailed("no command to run")
    program = process.argv[0]
    if not os.path.isdir(process.cwd):
        raise SpawnFailed(f"cannot use working directory {process.cwd}: No such file or directory")
    path = process.env.get("PATH", os.defpath)
    found = program if "/" in program else shutil.which(program, path=path)
    try:
        mode = os.stat(found).st_mode if found is not None else None  # one stat: is it there
    except OSError:
        mode = None
    if found is None or mode is None:
        raise SpawnFailed(f"command not found: {program}", 127)
    if stat.S_ISDIR(mode) or not os.access(found, os.X_OK):
        raise SpawnFailed(f"permission denied: {program}")


class BwrapSandbox:
    """One job confined by bubblewrap: every command of it starts through :attr:`spawn`."""

    def __init__(
        self,
        dirs: JobDirs,
        policy: SandboxPolicy,
        *,
        config_dir: str,
        hidden: Sequence[str] = (),
        readable: Sequence[str] = (),
        parent_home: str | None = None,
        spawner: Spawner = spawn,
        mounts: BwrapMounts | None = None,
        binary: str | None = None,
    ) -> None:
        self._dirs = dirs
        self._policy = policy
        self._config_dir = config_dir
        # The run's mount plans (Sandboxes passes one per run): a job resolves nothing.
        self._mounts = mounts or BwrapMounts(hidden=hidden, readable=readable)
        # The run's HOME and this process's (an API caller may pass another): both hidden.
        self._homes = [h for h in (parent_home, os.environ.get("HOME")) if h]
        self._spawner = spawner
        self._binary = binary or bwrap_path() or "bwrap"
        self._running: set[BwrapProcess] = set()
        self._closed = False

    @property
    def kind(self) -> SandboxKind:
        return "bwrap"

    @property
    def spawn(self) -> Spawner:
        return self._spawn

    def _options(self, env: dict[str, str], argv: Sequence[str]) -> list[str]:
        return self._mounts.options(
            self._dirs,
            self._policy,
            config_dir=self._config_dir,
            env_path=env.get("PATH", os.defpath),
            homes=self._homes,
            argv=argv,
        )

    async def _spawn(self, process: ProcessSpec) -> ManagedProcess:
        if self._closed:
            raise RuntimeError("the job's sandbox is closed")
        _check_program(process)
        argv = [
            self._binary,
            *self._options(process.env, process.argv),
            "--chdir",
            process.cwd,
            "--",
            *process.argv,
        ]
        # No job marker: the namespace is the command's whole tree, and bwrap's
        # --die-with-parent ends it if the harness dies.
        outer = await self._spawner(replace(process, argv=argv, marker=None))
        assert isinstance(outer, AgentProcess)
        proc = BwrapProcess(outer, self._running.discard)
        self._running.add(proc)
        return proc

    async def put_file(self, source: Path, destination: Path) -> None:
        copy_file(source, destination)  # the job's folder is bound at the same path

    async def pull(self, path: Path) -> None:
        return None

    async def before_agent(self) -> None:
        return None

    async def after_agent(self) -> list[str]:
        return []

    async def release(self, marker: str) -> None:
        return None  # each command's namespace ended with it

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for proc in list(self._running):
            await proc.stop(0.5)
