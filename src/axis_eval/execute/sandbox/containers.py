"""The job containers of the ``docker`` sandbox: how one starts, how they all go.

A container runs the agent image's entrypoint, ``ax-task-runner``, as PID 1 with its guest
services on a Unix socket in a host folder mounted at :data:`GUEST_DIR` (:func:`run_args`:
``--guest-services-only``, which listens only once the services answer, so the socket
file appearing is the runner's readiness). Each carries labels naming its run and its
owner (host, boot, pid and start time of the harness), so every exit path can find it
again:

- the job's end removes its container (:func:`remove_containers`);
- the run's end removes every container labelled with the run (:func:`remove_run`);
- a harness that dies (SIGKILL included) leaves a :class:`Watchdog` behind whose stdin
  pipe only the harness held: at EOF it removes the run's containers;
- and the next run's first docker job removes containers whose owner is no longer alive
  on this host (:func:`remove_orphaned`), should even the watchdog have been killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

from axis_eval.execute.process import ManagedProcess, ProcessSpec, SpawnFailed, spawn
from axis_eval.execute.process.procfs import process_info
from axis_eval.execute.sandbox.docker_cli import DockerCallFailed, docker_binary, run_docker

__all__ = [
    "AGENTS_IN_IMAGE",
    "GUEST_DIR",
    "LABEL_JOB",
    "LABEL_OWNER",
    "LABEL_OWNER_PID",
    "LABEL_RUN",
    "SOCKET_NAME",
    "ContainerSpec",
    "Owner",
    "Watchdog",
    "remove_containers",
    "remove_orphaned",
    "remove_run",
    "run_args",
]

LABEL_RUN = "axis-eval.run"
LABEL_JOB = "axis-eval.job"
LABEL_OWNER_PID = "axis-eval.owner-pid"
LABEL_OWNER = "axis-eval.owner"
"""``<host> <boot id> <pid> <start tick>`` of the harness that started the container."""
GUEST_DIR = "/run/axis-guest"
"""Where the container sees its host folder: the runner's socket and workspace folder."""
SOCKET_NAME = "guest.sock"
AGENTS_IN_IMAGE = "/opt/axis-agents"
"""Where the agent image holds the pinned CLIs (docker/build_agents.py)."""
REMOVE_TIMEOUT_S = 60.0


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "-"


@dataclass(frozen=True)
class Owner:
    """The harness process that owns a container, as its label names it."""

    host: str
    boot: str
    pid: int
    start: int

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        info = process_info(pid)
        return cls(socket.gethostname() or "-", _boot_id(), pid, info[4] if info else 0)

    @property
    def label(self) -> str:
        return f"{self.host} {self.boot} {self.pid} {self.start}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        parts = text.split()
        if len(parts) != 4:
            return None
        try:
            return cls(parts[0], parts[1], int(parts[2]), int(parts[3]))
        except ValueError:
            return None

    def gone(self, here: Owner) -> bool:
        """Whether this owner is surely dead, seen from ``here`` (the current process):
        same host, and another boot or no live process with that pid and start time.
        An owner on another host is never judged (a daemon shared between machines)."""
        if self.host != here.host:
            return False
        if self.boot != here.boot:
            return True
        if self.pid == here.pid:
            return self.start != here.start
        info = process_info(self.pid)
        return info is None or info[0] in ("Z", "X") or info[4] != self.start


@dataclass(frozen=True)
class ContainerSpec:
    """What one job container gets (turned into ``docker run`` options by :func:`run_args`)."""

    image: str
    name: str
    shared_dir: str
    """Host folder mounted at :data:`GUEST_DIR` (the runner's socket and Task file)."""
    labels: dict[str, str]
    network: str = "host"
    memory_mb: int | None = None
    pids: int | None = None
    cpus: float | None = None
    read_only: Sequence[str] = ()
    """Host folders mounted read-only at the same path (the config folder,
    ``sandbox.readable``)."""
    writable: Sequence[str] = ()
    """Host folders mounted read-write at the same path (``sandbox.writable``)."""
    hidden: Sequence[str] = ()
    """Folders inside those that are covered by an empty tmpfs (the project's ``.axis``)."""
    user: str | None = None
    """``uid:gid`` to run as (a harness that is not root: the socket is then its own)."""
    extra: Sequence[str] = field(default_factory=tuple)


def _mount(**fields: str | None) -> str:
    """A ``--mount`` value; csv quoting keeps a path with a comma or a quote one field."""
    items = [f"{k}={v}" if v is not None else k for k, v in fields.items()]
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(items)
    return out.getvalue()


def run_args(spec: ContainerSpec) -> list[str]:
    """``docker run`` arguments (after ``docker``) for one job container."""
    args = ["run", "-d", "--pull", "never", "--name", spec.name]
    for key, value in spec.labels.items():
        args += ["--label", f"{key}={value}"]
    args += ["--network", spec.network]
    if spec.memory_mb is not None:
        # No swap on top: the limit is what the job may use.
        args += ["--memory", f"{spec.memory_mb}m", "--memory-swap", f"{spec.memory_mb}m"]
    if spec.pids is not None:
        args += ["--pids-limit", str(spec.pids)]
    if spec.cpus is not None:
        args += ["--cpus", f"{spec.cpus:g}"]
    if spec.user is not None:
        args += ["--user", spec.user]
    # A bounded log (the runner's own lines; a job could write to PID 1's stderr).
    args += ["--log-driver", "local", "--log-opt", "max-size=1m", "--log-opt", "max-file=2"]
    args += ["--security-opt", "no-new-privileges"]
    args += ["--mount", _mount(type="bind", source=spec.shared_dir, target=GUEST_DIR)]
    for folder in spec.read_only:
        args += ["--mount", _mount(type="bind", source=folder, target=folder, readonly=None)]
    for folder in spec.writable:
        args += ["--mount", _mount(type="bind", source=folder, target=folder)]
    for folder in spec.hidden:
        args += ["--mount", _mount(type="tmpfs", target=folder, **{"tmpfs-size": "1m"})]
    args += [*spec.extra, spec.image]
    # The image's entrypoint is the runner; these are its flags: guest services only (no
    # Task: the harness starts everything), listening once they answer.
    args += [
        "--guest-services-only",
        "--unix-socket", f"{GUEST_DIR}/{SOCKET_NAME}",
        "--workspace-root", f"{GUEST_DIR}/ws",
        "--guest-env", "empty",
        "--no-confine-files",
    ]  # fmt: skip
    return args


def _describe_failure(image: str, reason: str) -> str:
    lowered = reason.lower()
    if "cannot connect to the docker daemon" in lowered or "docker daemon" in lowered:
        host = os.environ.get("DOCKER_HOST", "the default socket")
        return f"no Docker daemon answers ({host}): {reason}"
    if "no such image" in lowered or "unable to find image" in lowered:
        return (
            f"the image {image} is not in the Docker daemon: build it with "
            f"`make build-agent-image` (or set sandbox.image); images are never pulled: "
            f"{reason}"
        )
    return f"docker run {image} failed: {reason}"


async def start_container(spec: ContainerSpec, *, timeout_s: float = 120.0) -> str:
    """``docker run -d``: the new container's id.

    Raises:
        ContainerFailed: docker refused or failed (the message says why, in words a
            user can act on).
    """
    try:
        done = await run_docker(run_args(spec), timeout_s=timeout_s)
    except DockerCallFailed as exc:
        await remove_containers([spec.name])  # it may have been created all the same
        raise ContainerFailed(str(exc)) from exc
    except BaseException:
        await asyncio.shield(remove_containers([spec.name]))
        raise
    if not done.ok:
        # A container created but not started (a bad option, a logging driver...) stays.
        await remove_containers([spec.name])
        raise ContainerFailed(_describe_failure(spec.image, done.reason()))
    ids = done.stdout.split()
    if not ids:
        raise ContainerFailed(f"docker run {spec.image} printed no container id")
    return ids[-1]


class ContainerFailed(Exception):
    """A job container could not be started (the job is an infrastructure failure)."""


async def container_state(container: str) -> str:
    """``<status> <exit code>`` of a container, plus the tail of its log when it has
    stopped (for the message of a runner that did not come up)."""
    try:
        done = await run_docker(
            ["inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container], timeout_s=20
        )
    except DockerCallFailed as exc:
        return f"unknown ({exc})"
    state = done.stdout.strip() if done.ok else f"unknown ({done.reason()})"
    if done.ok and not state.startswith("running"):
        with contextlib.suppress(DockerCallFailed):
            logs = await run_docker(["logs", "--tail", "15", container], timeout_s=20)
            tail = (logs.stderr + logs.stdout).strip()
            if tail:
                state += f"; its log ends:\n{tail[-2000:]}"
    return state


async def remove_containers(ids: Sequence[str]) -> None:
    """``docker rm -f`` (nothing to do for no ids; a gone container is no error)."""
    if ids:
        with contextlib.suppress(DockerCallFailed):
            await run_docker(["rm", "-f", "-v", *ids], timeout_s=REMOVE_TIMEOUT_S)


async def _labelled(label_filter: str, fmt: str) -> list[str]:
    try:
        done = await run_docker(
            ["ps", "-a", "--no-trunc", "--filter", f"label={label_filter}", "--format", fmt],
            timeout_s=30,
        )
    except DockerCallFailed:
        return []
    return [line for line in done.stdout.splitlines() if line.strip()] if done.ok else []


async def remove_run(run_token: str) -> None:
    """Remove every container labelled with the run."""
    await remove_containers(await _labelled(f"{LABEL_RUN}={run_token}", "{{.ID}}"))


async def remove_orphaned(here: Owner) -> list[str]:
    """Remove the containers of harnesses on this host that are gone (killed before they
    could clean up, with their watchdog); the ids removed."""
    lines = await _labelled(LABEL_OWNER, f'{{{{.ID}}}} {{{{.Label "{LABEL_OWNER}"}}}}')
    stale: list[str] = []
    for line in lines:
        cid, _, label = line.partition(" ")
        owner = Owner.parse(label)
        if owner is not None and owner.gone(here):
            stale.append(cid)
    await remove_containers(stale)
    return stale


WATCHDOG = """\
exec >/dev/null 2>&1
read -r word || true
[ "$word" = done ] && exit 0
quiet=0 rounds=0
while [ "$quiet" -lt 3 ] && [ "$rounds" -lt 120 ]; do
  ids=$("$0" ps -aq --no-trunc --filter "label=$1")
  if [ -n "$ids" ]; then quiet=0; "$0" rm -f -v $ids; else quiet=$((quiet + 1)); fi
  rounds=$((rounds + 1))
  sleep 1
done
rm -rf -- "$2"
"""
"""Blocks on stdin, whose write end only the harness holds; EOF without ``done`` (the
harness died, even by SIGKILL) removes the run's containers, sweeping once a second until
three sweeps in a row find none: a ``docker run`` the harness had under way when it died
still creates its container a moment later; then removes the run's host folder. ``$0`` is
the docker CLI, ``$1`` the label filter, ``$2`` the run's folder."""


class Watchdog:
    """A small shell process that removes the run's containers if the harness dies."""

    def __init__(self, proc: ManagedProcess) -> None:
        self._proc = proc

    @classmethod
    async def start(cls, run_token: str, run_dir: str) -> Watchdog | None:
        """Start it for the run's containers and host folder (None when there is no
        docker CLI or sh to run it)."""
        program = docker_binary()
        if program is None:
            return None
        argv = ["/bin/sh", "-c", WATCHDOG, program, f"{LABEL_RUN}={run_token}", run_dir]
        try:
            # Its own session (a Ctrl-C of the terminal does not reach it) and no job
            # marker (the sentinel's sweep leaves it alone); its stdin is our pipe.
            proc = await spawn(ProcessSpec(argv, "/", dict(os.environ), None, stdin_pipe=True))
        except SpawnFailed:
            return None
        return cls(proc)

    async def close(self, *, sweep: bool = False) -> None:
        """The run removed its containers itself: let the watchdog exit quietly; with
        ``sweep`` (a start was still under way), let it sweep a few seconds more on its own
        instead."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            with contextlib.suppress(OSError):
                if not sweep:
                    stdin.write(b"done\n")
                stdin.close()
        if sweep:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), 5.0)
        await self._proc.stop(0.2)
