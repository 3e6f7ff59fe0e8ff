"""``bwrap``: each command of a job in its own bubblewrap namespaces.

What a confined process sees (``docs/sandboxes.md``):

- the host's folders read-only; a private ``/tmp``, ``/run``, ``/dev`` and ``/proc`` (its
  own PID namespace: no host process, the harness included, is visible);
- hidden (empty folders): the parent's HOME, ``/home`` and ``/root``, and the folders the run
  names (the project's ``.axis``: other runs' reports);
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
import functools
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from axis_eval.adapters.install import agents_dir
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
from axis_eval.execute.sandbox.host import copy_file
from axis_eval.execute.sandbox.probe import bwrap_path
from axis_eval.execute.workspace import JobDirs

__all__ = ["BwrapProcess", "BwrapSandbox", "bwrap_args"]

HIDDEN_ALWAYS = ("/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm")
"""Folders replaced by an empty tmpfs: other users' files, sockets of system daemons (the
Docker socket is root's keys to the machine), and every other job's temporary folders."""


_HIDE, _READ, _WRITE, _SECRET, _JOB = range(5)
"""Rules for a path, weakest first: at one path the stronger wins."""
_RULES = {
    _HIDE: "--tmpfs",  # the system's and the parent's private folders
    _READ: "--ro-bind",  # what the job must read inside them
    _WRITE: "--bind",  # sandbox.writable
    _SECRET: "--tmpfs",  # other jobs' folders, other runs' reports: never given back
    _JOB: "--bind",  # the job's own folder
}

PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
"""Kernel settings under the fresh /proc, bound read-only over it."""


def _existing_dirs(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        if not path or not path.startswith("/"):
            continue
        real = os.path.realpath(path)
        if os.path.isdir(real) and real != "/" and real not in out:
            out.append(real)
    return out


TOOLCHAIN_HOMES = frozenset(
    {".pyenv", ".rbenv", ".nodenv", ".nvm", ".asdf", ".volta", ".bun", ".deno", ".sdkman"}
)
"""Version managers in a HOME whose ``PATH`` entries (shims) run code from the rest of their
folder: for a ``PATH`` entry inside one, the whole folder stays readable. Any other ``PATH``
entry inside a HOME is readable alone (``~/.cargo/bin``, not ``~/.cargo``'s credentials)."""


def _toolchain_root(entry: str) -> str:
    """The version manager's folder holding ``entry`` (``~/.pyenv`` for ``~/.pyenv/shims``),
    else ``entry``."""
    parts = entry.split("/")
    for i, part in enumerate(parts):
        if part in TOOLCHAIN_HOMES:
            return "/".join(parts[: i + 1])
    return entry


def default_readable(config_dir: str, env_path: str) -> list[str]:
    """:func:`_default_readable`, resolved once per run's inputs (about 50 ``realpath``
    calls: per job they cost more than the ``/proc`` scans a namespace saves)."""
    keys = (READABLE_ENV, "AXIS_AGENTS_DIR", "XDG_CACHE_HOME", "HOME")
    return list(_default_readable(config_dir, env_path, tuple(os.environ.get(k) for k in keys)))


@functools.lru_cache(maxsize=64)
def _default_readable(
    config_dir: str, env_path: str, environ: tuple[str | None, ...]
) -> tuple[str, ...]:
    """What a confined job must still read where it lives under a hidden folder: the config
    folder, the agent CLIs, the folders of ``PATH`` (a version manager's whole folder, see
    :data:`TOOLCHAIN_HOMES`) and this Python's installation."""
    del environ  # part of the cache key only: agents_dir() and the extras read it
    entries = [_toolchain_root(os.path.realpath(e)) for e in env_path.split(os.pathsep) if e]
    return tuple(
        _existing_dirs(
            [
                config_dir,
                str(agents_dir()),
                *entries,
                sys.prefix,
                sys.base_prefix,
                HARNESS_CODE,
                *os.environ.get(READABLE_ENV, "").split(os.pathsep),
            ]
        )
    )


READABLE_ENV = "AXIS_SANDBOX_READABLE"
"""Folders (``:``-separated) every confined job of this process may read: the machine's
counterpart of ``sandbox.readable`` (a CI checkout under ``/tmp`` holding the agents)."""


HARNESS_CODE = str(Path(__file__).resolve().parents[3])
"""The folder holding this package (``src`` of an editable install): the harness's own
code, which a confined Python agent or check may import."""


def named_folders(argv: Sequence[str], guarded: Sequence[str] = ()) -> list[str]:
    """What of the files a command line names by absolute path stays readable: the program,
    and a script an interpreter runs (``python /path/agent.py``), with the modules beside
    it. A folder that is, or holds, a ``guarded`` (hidden) folder is never opened this way:
    the file alone is (``python3 ~/agent.py`` must not open the HOME)."""
    out: list[str] = []
    for arg in argv:
        if not arg.startswith("/") or "\0" in arg or not os.path.isfile(arg):
            continue
        folder = os.path.dirname(os.path.realpath(arg))
        opens_guarded = any(_under(os.path.realpath(g), folder) for g in guarded if g)
        out.append(os.path.realpath(arg) if opens_guarded else folder)
    return out


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def bwrap_args(
    dirs: JobDirs,
    policy: SandboxPolicy,
    *,
    hidden: Sequence[str],
    readable: Sequence[str],
    parent_homes: Sequence[str],
) -> list[str]:
    """bwrap's options for one job (everything before ``--chdir``).

    Mounts go shallowest first, so a folder's rule holds below it until a deeper rule says
    otherwise (the config folder readable inside a hidden HOME, its ``.axis`` hidden again
    inside it, a ``sandbox.writable`` folder inside ``/tmp``); at the same path the
    stronger rule wins (:data:`_RULES`).
    """
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # The kernel's knobs stay read-only: as root (capabilities dropped or not) a writable
    # /proc/sys is kernel.core_pattern, a program run as root outside every namespace.
    for knob in PROC_READ_ONLY:
        args += ["--ro-bind-try", knob, knob]
    plan: dict[str, int] = {}

    def rule(paths: Iterable[str], strength: int) -> None:
        for path in paths:
            plan[path] = max(plan.get(path, strength), strength)

    # The folder the job folders are made in: every other job's folder is there.
    jobs_parent = os.path.dirname(dirs.root_dir.rstrip("/"))
    emptied = _existing_dirs([*HIDDEN_ALWAYS, *parent_homes, jobs_parent, *hidden])
    rule(_existing_dirs([*HIDDEN_ALWAYS, *parent_homes]), _HIDE)
    resolv = os.path.realpath("/etc/resolv.conf")
    if os.path.isfile(resolv):
        # /etc/resolv.conf often points into /run (systemd-resolved): keep names resolving.
        rule([resolv], _READ)
    rule(readable, _READ)
    rule(_existing_dirs(policy.readable), _READ)
    rule(_existing_dirs(policy.writable), _WRITE)
    rule(_existing_dirs([jobs_parent, *hidden]), _SECRET)
    rule([dirs.root_dir], _JOB)
    for path in sorted(plan, key=lambda p: (p.count("/"), plan[p])):
        strength = plan[path]
        if strength == _READ and not any(_under(path, e) and path != e for e in emptied):
            continue  # visible (read-only) already: no mount needed
        args += (
            [_RULES[strength], path]
            if strength in (_HIDE, _SECRET)
            else [
                _RULES[strength],
                path,
                path,
            ]
        )
    args += [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "axis-sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    if policy.network == "none":
        args.append("--unshare-net")
    return args


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
    if "/" in program:
        found = program if os.path.exists(program) else None
    else:
        found = shutil.which(program, path=process.env.get("PATH", os.defpath))
    if found is None:
        raise SpawnFailed(f"command not found: {program}", 127)
    if not os.access(found, os.X_OK) or os.path.isdir(found):
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
    ) -> None:
        self._dirs = dirs
        self._policy = policy
        self._config_dir = config_dir
        self._hidden = hidden
        self._readable = readable
        # The run's HOME and this process's (an API caller may pass another): both hidden.
        self._homes = [h for h in (parent_home, os.environ.get("HOME")) if h]
        self._spawner = spawner
        self._binary = bwrap_path() or "bwrap"
        self._prefix: dict[tuple[str, ...], list[str]] = {}
        self._running: set[BwrapProcess] = set()
        self._closed = False

    @property
    def kind(self) -> SandboxKind:
        return "bwrap"

    @property
    def spawn(self) -> Spawner:
        return self._spawn

    def _options(self, env: dict[str, str], argv: Sequence[str]) -> list[str]:
        # The folders of what the command line names stay readable (a configured command).
        guarded = [*HIDDEN_ALWAYS, *self._homes, *self._hidden]
        folders = tuple(named_folders(argv, guarded))
        options = self._prefix.get(folders)
        if options is None:
            readable = [
                *default_readable(self._config_dir, env.get("PATH", os.defpath)),
                *_existing_dirs(self._readable),
                *folders,  # folders, or single files where a folder would open a hidden one
            ]
            options = self._prefix[folders] = bwrap_args(
                self._dirs,
                self._policy,
                hidden=self._hidden,
                readable=readable,
                parent_homes=self._homes,
            )
        return options

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
