"""What a bwrap job sees: its mounts, planned once per run and completed per job.

A job's bwrap options are the run's folders (hidden, given back read-only, writable) plus
its own folder. Resolving the run's folders takes ~50 ``realpath`` calls (116 ``lstat`` +
49 ``stat``): done for every job, that cost more harness CPU than the ``/proc`` scans a PID
namespace saves (``docs/benchmarks.md``). So :class:`BwrapMounts` (one per run, held by
:class:`~axis_eval.execute.sandbox.sandboxes.Sandboxes`) resolves them once per distinct
set of inputs (config folder, ``PATH``, policy, the folders a command line names) into a
sorted mount plan, and a job only slots its own folder into that plan. Nothing is cached
across runs: a folder made between two runs of one process is seen by the second.
"""

from __future__ import annotations

import bisect
import os
import pwd
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from axis_eval.adapters.install import agents_dir
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.sandbox.probe import bwrap_sizes_tmpfs
from axis_eval.execute.workspace import JobDirs, jobs_base

__all__ = [
    "HIDDEN_ALWAYS",
    "SCRATCH",
    "SCRATCH_MB",
    "BwrapMounts",
    "bwrap_args",
    "default_readable",
    "named_folders",
]

HIDDEN_ALWAYS = ("/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm")
"""Folders replaced by an empty tmpfs: other users' files, sockets of system daemons (the
Docker socket is root's keys to the machine), and every other job's temporary folders."""

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")
"""The covers a job may write, private and in memory, with the running user's home from
the password database (:func:`passwd_home`: Java's ``user.home``, ssh's ``~``; where
:func:`_home_mount` puts it). Every other cover, and ``/dev``, is read-only. (``TMPDIR`` is
the job's own ``tmp`` folder.)"""
SCRATCH_MB = 512
"""What each scratch tmpfs holds at most, in file data (MiB). A tmpfs's pages belong to no
process, so an unbounded one (the kernel's default: half the RAM, per mount) lets a job
fill the machine's memory past every process limit, and the OOM killer then picks another
process, the harness included. bwrap cannot bound a tmpfs's inodes: its entries (~1.4 KiB
of kernel memory each, up to the kernel's default count) stay unbounded
(docs/sandboxes.md)."""
COVER_BYTES = 1 << 20
"""The size of a read-only cover (nothing can be written there; bwrap's mount points take
no pages): a second bound should the remount ever not hold."""


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

_NAMESPACES = [
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


def passwd_home() -> str | None:
    """The running user's home in the password database, as written there (normalized, not
    resolved: the path tools open), where it is absolute: where tools that ignore ``HOME``
    write (Java's ``user.home``, Maven's ``~/.m2``). It need not exist."""
    try:
        home = pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return None
    return os.path.normpath(home) if home.startswith("/") else None


_SYSTEM = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "usr"}
)
"""Top-level folders no passwd home is covered in (Debian's ``sys`` has ``/dev`` for home)."""


def _home_mount(home: str | None, covers: Sequence[str], jobs_parent: str) -> str | None:
    """Where the passwd home's scratch tmpfs goes, resolved (so a path through a symlink such
    as ``/var/run`` is mounted where bwrap can make it), or None to leave the home as the
    host has it: a system folder, a top-level folder that is no cover, a folder with the
    jobs' folders in it, or a missing home whose nearest existing folder is not a cover (a
    mount point bwrap could not make: ``/nonexistent``)."""
    if home is None:
        return None
    real = os.path.realpath(home)
    parts = real.strip("/").split("/")
    if real == "/" or parts[0] in _SYSTEM or _under(real, jobs_parent):
        return None
    if len(parts) == 1 and real not in covers:
        return None  # /var, /opt, /srv: the host's own
    if os.path.isdir(real):
        return real
    if os.path.lexists(real):
        return None  # a file, or a dangling link
    parent = os.path.dirname(real)
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    return real if os.path.realpath(parent) in covers else None


def _home_link(written: str | None, mounted: str | None, covers: Sequence[str]) -> str | None:
    """Where to make a symlink to the mounted passwd home: at the home's path as written,
    when that differs from the mounted one and lies right inside a cover (bwrap can make it
    in the cover's tmpfs); None otherwise."""
    if written is None or mounted is None:
        return None
    parent = os.path.realpath(os.path.dirname(written))
    at = f"{parent.rstrip('/')}/{os.path.basename(written)}"
    return at if at != mounted and parent in covers else None


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


READABLE_ENV = "AXIS_SANDBOX_READABLE"
"""Folders (``:``-separated) every confined job of this process may read: the machine's
counterpart of ``sandbox.readable`` (a CI checkout under ``/tmp`` holding the agents)."""


HARNESS_CODE = str(Path(__file__).resolve().parents[3])
"""The folder holding this package (``src`` of an editable install): the harness's own
code, which a confined Python agent or check may import."""


def default_readable(config_dir: str, env_path: str) -> list[str]:
    """What a confined job must still read where it lives under a hidden folder: the config
    folder, the agent CLIs, the folders of ``PATH`` (a version manager's whole folder, see
    :data:`TOOLCHAIN_HOMES`) and this Python's installation."""
    entries = [_toolchain_root(os.path.realpath(e)) for e in env_path.split(os.pathsep) if e]
    return _existing_dirs(
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


def named_folders(argv: Sequence[str], guarded: Sequence[str] = ()) -> list[str]:
    """What of the files a command line names by absolute path stays readable: the program,
    and a script an interpreter runs (``python /path/agent.py``), with the modules beside
    it. A folder that is, or holds, a ``guarded`` (hidden) folder is never opened this way:
    the file alone is (``python3 ~/agent.py`` must not open the HOME). ``guarded`` folders
    are given resolved."""
    out: list[str] = []
    for arg in argv:
        if not arg.startswith("/") or "\0" in arg or not os.path.isfile(arg):
            continue
        real = os.path.realpath(arg)
        folder = os.path.dirname(real)
        opens_guarded = any(_under(g, folder) for g in guarded if g)
        out.append(real if opens_guarded else folder)
    return out


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@dataclass(frozen=True)
class _Plan:
    """The run's mounts in the order bwrap applies them, without the job's own folder."""

    keys: list[tuple[int, int]]
    """Each mount's sort key: (depth, rule)."""
    mounts: list[list[str]]
    seal: list[str]
    """``--remount-ro`` of the read-only covers and ``/dev``, once every mount is made (bwrap
    makes the mount points inside them first)."""
    tail: list[str]
    """The namespace options after the mounts."""

    def options(self, job_root: str) -> list[str]:
        """The whole option list for the job whose folder is ``job_root``: its bind slots in
        where sorting every mount would have put it (after its equals: it is the strongest)."""
        at = bisect.bisect_right(self.keys, (job_root.count("/"), _JOB))
        out = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # The kernel's knobs stay read-only: as root (capabilities dropped or not) a
        # writable /proc/sys is kernel.core_pattern, a program run as root outside every
        # namespace.
        for knob in PROC_READ_ONLY:
            out += ["--ro-bind-try", knob, knob]
        for mount in self.mounts[:at]:
            out += mount
        out += [_RULES[_JOB], job_root, job_root]
        for mount in self.mounts[at:]:
            out += mount
        return out + self.seal + self.tail


def _plan(
    jobs_parent: str,
    policy: SandboxPolicy,
    *,
    hidden: Sequence[str],
    readable: Sequence[str],
    parent_homes: Sequence[str],
    sized: bool,
) -> _Plan:
    """Mounts go shallowest first, so a folder's rule holds below it until a deeper rule
    says otherwise (the config folder readable inside a hidden HOME, its ``.axis`` hidden
    again inside it, a ``sandbox.writable`` folder inside ``/tmp``); at the same path the
    stronger rule wins (:data:`_RULES`). Each cover is a bounded tmpfs when ``sized`` (this
    bwrap has ``--size``), and read-only unless it is a :data:`SCRATCH` folder."""
    plan: dict[str, int] = {}

    def rule(paths: Iterable[str], strength: int) -> None:
        for path in paths:
            plan[path] = max(plan.get(path, strength), strength)

    # jobs_parent: the folder the job folders are made in, every other job's folder is there.
    # /dev/shm is taken as named: inside, it is in bwrap's own /dev, wherever the host's
    # points (a symlink to /run/shm on some systems).
    covers = _existing_dirs([*HIDDEN_ALWAYS, *parent_homes])
    also_read, also_written = _existing_dirs(policy.readable), _existing_dirs(policy.writable)
    given = [*readable, *also_read, *also_written]
    written_home = passwd_home()
    own_home = _home_mount(written_home, covers, jobs_parent)
    if own_home and any(_under(own_home, g) and own_home != g for g in given):
        own_home = None  # inside a folder given back (a toolchain, the venv): keep it whole
    mine = [own_home] if own_home else []
    # A home reached through a symlink in a cover (/home/u -> /data/u): the link, made again
    # in the cover's tmpfs, so the path tools open leads to the scratch folder.
    link = _home_link(written_home, own_home, covers)
    secret = _existing_dirs([jobs_parent, *hidden])
    emptied = [*covers, *secret, "/dev/shm", *mine]
    rule([*covers, "/dev/shm", *mine], _HIDE)
    resolv = os.path.realpath("/etc/resolv.conf")
    if os.path.isfile(resolv):
        # /etc/resolv.conf often points into /run (systemd-resolved): keep names resolving.
        rule([resolv], _READ)
    rule(readable, _READ)
    rule(also_read, _READ)
    rule(also_written, _WRITE)
    rule(secret, _SECRET)
    scratch = {*_existing_dirs(SCRATCH), "/dev/shm"}
    keys: list[tuple[int, int]] = []
    mounts: list[list[str]] = []
    seal: list[str] = []
    for path in sorted(plan, key=lambda p: (p.count("/"), plan[p])):
        strength = plan[path]
        if strength == _READ and not any(_under(path, e) and path != e for e in emptied):
            continue  # visible (read-only) already: no mount needed
        keys.append((path.count("/"), strength))
        if strength in (_HIDE, _SECRET):
            # The passwd home only as a plain cover: never where other jobs' folders or
            # another run's reports are covered (a SECRET at the same path).
            writable = path in scratch or (path == own_home and strength == _HIDE)
            size = SCRATCH_MB << 20 if writable else COVER_BYTES
            mounts.append(["--size", str(size), "--tmpfs", path] if sized else ["--tmpfs", path])
            if not writable:
                seal += ["--remount-ro", path]
        else:
            mounts.append([_RULES[strength], path, path])
    seal += ["--remount-ro", "/dev"]  # bwrap's /dev is a tmpfs too (its devices are binds)
    if link and own_home:
        seal = ["--symlink", own_home, link, *seal]  # before the covers go read-only
    tail = [*_NAMESPACES, "--unshare-net"] if policy.network == "none" else list(_NAMESPACES)
    return _Plan(keys=keys, mounts=mounts, seal=seal, tail=tail)


def bwrap_args(
    dirs: JobDirs,
    policy: SandboxPolicy,
    *,
    hidden: Sequence[str],
    readable: Sequence[str],
    parent_homes: Sequence[str],
) -> list[str]:
    """bwrap's options for one job (everything before ``--chdir``), resolved afresh."""
    root = dirs.root_dir
    jobs_parent = jobs_base(root)
    plan = _plan(
        jobs_parent,
        policy,
        hidden=hidden,
        readable=readable,
        parent_homes=parent_homes,
        sized=bwrap_sizes_tmpfs(),
    )
    return plan.options(root)


class BwrapMounts:
    """The run's mount plans: each distinct set of inputs is resolved once, each job's
    options are that plan with its own folder slotted in."""

    def __init__(self, *, hidden: Sequence[str], readable: Sequence[str]) -> None:
        self._hidden = tuple(hidden)
        self._readable = tuple(readable)
        self._plans: dict[tuple[object, ...], _Plan] = {}
        self._guarded: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._named: dict[tuple[object, ...], tuple[str, ...]] = {}

    def guarded(self, homes: Sequence[str]) -> tuple[str, ...]:
        """The hidden folders, resolved, that a command's named folder may not open."""
        key = tuple(homes)
        found = self._guarded.get(key)
        if found is None:
            paths = (*HIDDEN_ALWAYS, *key, *self._hidden, passwd_home() or "")
            found = self._guarded[key] = tuple(
                dict.fromkeys(q for p in paths if p for q in (os.path.realpath(p), p))
            )
        return found

    def options(
        self,
        dirs: JobDirs,
        policy: SandboxPolicy,
        *,
        config_dir: str,
        env_path: str,
        homes: Sequence[str],
        argv: Sequence[str],
    ) -> list[str]:
        """bwrap's options for one command of one job (everything before ``--chdir``)."""
        root = dirs.root_dir
        jobs_parent = jobs_base(root)
        folders = self._named_folders(argv, homes, jobs_parent)
        key = (
            config_dir,
            env_path,
            tuple(homes),
            jobs_parent,
            policy.network,
            tuple(policy.readable),
            tuple(policy.writable),
            folders,
        )
        plan = self._plans.get(key)
        if plan is None:
            readable = [
                *default_readable(config_dir, env_path),
                *_existing_dirs(self._readable),
                *folders,  # folders, or single files where a folder would open a hidden one
            ]
            plan = self._plans[key] = _plan(
                jobs_parent,
                policy,
                hidden=self._hidden,
                readable=readable,
                parent_homes=homes,
                sized=bwrap_sizes_tmpfs(),
            )
        return plan.options(root)

    def _named_folders(
        self, argv: Sequence[str], homes: Sequence[str], jobs_parent: str
    ) -> tuple[str, ...]:
        """:func:`named_folders` of ``argv``, resolved once per run for a command line that
        names nothing under the jobs' folders (the same agent's program for every job: a
        ``realpath`` of it is ~10 system calls a job). A command line naming a job's own
        files (each job's are new) is resolved each time and kept nowhere."""
        named = tuple(a for a in argv if a.startswith("/"))
        if not named:
            return ()
        if any(_under(a, jobs_parent) for a in named):
            return tuple(named_folders(named, self.guarded(homes)))
        key = (named, tuple(homes))
        found = self._named.get(key)
        if found is None:
            found = tuple(named_folders(named, self.guarded(homes)))
            if len(self._named) < _MAX_NAMED:
                self._named[key] = found
        return found


_MAX_NAMED = 256
"""Distinct command lines whose named folders a run keeps (a few agents and checks each)."""
