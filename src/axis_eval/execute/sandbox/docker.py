"""``docker``: each job in a container of the agent image, ``ax-task-runner`` as PID 1,
driven over its guest services (:mod:`axis_eval.execute.guest`).

One container per job, never shared. Its runner listens on a Unix socket in a host folder
mounted at ``/run/axis-guest`` (``--guest-env empty``: a process gets exactly the job's
environment); the harness connects through a hard link of that socket in a folder the
container cannot see, so a job that replaces the socket file cannot redirect the harness
to another job's runner. What the job sees (``docs/sandboxes.md``):

- the image's filesystem, with the job's folders (workspace, HOME, TMPDIR) created at the
  same absolute paths as on the host, so ``HOME``, ``TMPDIR``, ``CLAUDE_CONFIG_DIR`` and an
  argv naming them work unchanged; the host's agent-CLI folder is linked to the image's
  ``/opt/axis-agents``, so the adapters' command lines resolve too;
- the config folder read-only at its own path (its ``.axis``, other runs' reports, covered
  by an empty tmpfs); nothing else of the host;
- its own PID, IPC, UTS and mount namespaces; network ``host`` or ``none``; the policy's
  memory, process and CPU limits (``--memory``, ``--pids-limit``, ``--cpus``).

Setup, the agent (its prompt on stdin when the adapter sends it so), checks and teardown
start through the runner's ProcessService; the adapter's files go in, and the workspace
comes back for artifacts and judges, through its FileSystemService (:mod:`.docker_sync`).

A container starts in one ``docker run`` plus the runner's own start (``ax-task-runner
--guest-services-only``: no pydantic, its socket made once the services answer): 0.45 s
from nothing to a running agent on a quiet 2-core machine, 1.0 s on a busy one, more
under ``network: none``, whose namespace Docker makes per container (docs/benchmarks.md,
"Docker start"). So a run keeps one spare started ahead per policy: the next job of that
policy takes it and its agent runs about 0.1 s after the job asked for its sandbox. Every
exit path removes them (:mod:`.containers`): the job's end, the run's end (``aclose``:
everything labelled with the run), a watchdog when the harness dies, and the next run's
first docker job for what a killed run left.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import itertools
import logging
import os
import stat
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from axis_eval._util.tree_removal import remove_tree
from axis_eval.config.sandbox import DEFAULT_AGENT_IMAGE, SandboxPolicy
from axis_eval.execute.sandbox.base import JobSandbox, SandboxUnavailable
from axis_eval.execute.sandbox.containers import (
    LABEL_JOB,
    LABEL_OWNER,
    LABEL_OWNER_PID,
    LABEL_RUN,
    SOCKET_NAME,
    ContainerFailed,
    ContainerSpec,
    Owner,
    Watchdog,
    container_state,
    remove_containers,
    remove_orphaned,
    remove_run,
    start_container,
)
from axis_eval.execute.sandbox.docker_cli import docker_binary
from axis_eval.execute.sandbox.docker_job import Container, ContainerKey, DockerSandbox, safe_name
from axis_eval.execute.workspace import JobDirs

if TYPE_CHECKING:
    from axis_eval.execute.guest import GuestClient

__all__ = ["DockerSandbox", "DockerSandboxes"]

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0
"""How long a started container's runner gets to listen on its socket."""
CLIENT_MODULES = (
    "axis_eval.execute.guest._rpc",
    "axis_eval.execute.guest.client",
    "axis_eval.execute.guest.remote",
)
"""The guest client (grpclib, protobuf: ~0.1 s of CPU here), loaded in a thread while the
run's first container starts instead of after its runner answers."""
CONNECT_TIMEOUT_S = 10.0
_SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes


class DockerSandboxes:
    """The run's job containers: opens one per job, removes them all at :meth:`aclose`.

    ``hidden``: host folders no job may see (covered by an empty tmpfs where they lie
    inside the config folder; the config folder's ``.axis`` always is). ``prestart``: keep
    one spare container started ahead per policy (the next job's start costs nothing).
    """

    def __init__(
        self, run_token: str, *, hidden: Sequence[str] = (), prestart: bool = True
    ) -> None:
        self.run_token = run_token
        self.hidden = tuple(hidden)
        self.prestart = prestart
        self._owner: Owner | None = None
        self._begun: asyncio.Task[None] | None = None
        self._client_loaded: asyncio.Future[None] | None = None
        self._watchdog: Watchdog | None = None
        self._spares: dict[ContainerKey, asyncio.Task[Container]] = {}
        self._starting: set[asyncio.Task[Container]] = set()
        self._removing: set[asyncio.Task[None]] = set()
        self._failed: set[ContainerKey] = set()
        self._live: dict[str, str] = {}  # container id -> its private folder
        self._clients: dict[str, GuestClient] = {}  # container id -> its connection
        self._serial = itertools.count(1)
        self._closed = False

    # -- opening a job's container

    async def open(
        self, policy: SandboxPolicy, dirs: JobDirs, marker: str, config_dir: str
    ) -> JobSandbox:
        """A container for one job, its runner answering and the job's folders made.

        Raises:
            SandboxUnavailable: no docker CLI, no daemon, no such image, or the container
                or its runner did not start (the job is an infrastructure failure).
        """
        if self._closed:
            raise SandboxUnavailable("the run is ending: no new container is started")
        if docker_binary() is None:
            raise SandboxUnavailable(
                "sandbox docker: the docker CLI is not installed (Debian package docker.io)"
            )
        await self._begin()
        key = ContainerKey(
            policy.image or DEFAULT_AGENT_IMAGE,
            policy.network,
            policy.memory_mb,
            policy.pids,
            policy.cpus,
            os.path.abspath(config_dir),
            tuple(policy.readable),
            tuple(policy.writable),
        )
        spare = self._spares.pop(key, None)
        if spare is not None:
            box = await self._box(spare, key, dirs, last_try=False)
            if box is not None:
                return box
        box = await self._box(self._start_task(key, marker), key, dirs, last_try=True)
        assert box is not None
        return box

    async def _box(
        self, task: asyncio.Task[Container], key: ContainerKey, dirs: JobDirs, *, last_try: bool
    ) -> DockerSandbox | None:
        """The job's sandbox in the container ``task`` starts; None when that was a spare
        that did not come up (the caller starts a fresh one)."""
        try:
            container = await self._claim(task)
        except SandboxUnavailable:
            if not last_try:
                return None
            self._failed.add(key)
            raise
        self._keep_spare(key)
        box = DockerSandbox(self, container, dirs)
        try:
            await box.prepare()
        except BaseException as exc:
            await asyncio.shield(box.close())
            if not isinstance(exc, Exception):
                raise
            if not last_try:
                return None
            if isinstance(exc, SandboxUnavailable):
                raise
            raise SandboxUnavailable(
                f"sandbox docker: the container did not answer: {exc}"
            ) from exc
        return box

    async def _claim(self, task: asyncio.Task[Container]) -> Container:
        """The container ``task`` starts; if the caller is cancelled meanwhile, the start
        goes on and its container is removed."""
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(self._drop_started)
            raise

    def _drop_started(self, task: asyncio.Task[Container]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        self._track(asyncio.get_running_loop().create_task(self.discard(task.result())))

    def _track(self, task: asyncio.Task[None]) -> None:
        self._removing.add(task)
        task.add_done_callback(self._removing.discard)

    def _keep_spare(self, key: ContainerKey) -> None:
        wanted = self.prestart and not self._closed and key not in self._failed
        if wanted and key not in self._spares:
            self._spares[key] = self._start_task(key, None)

    async def _begin(self) -> None:
        """On the first docker job: the watchdog, and (in the background) the removal of
        what killed runs on this host left."""
        if self._owner is not None:
            return
        self._owner = Owner.current()
        run_dir = self._run_dir()
        try:
            os.mkdir(run_dir, 0o700)  # noqa: PTH102
        except FileExistsError:
            st = os.lstat(run_dir)  # ours only: a real folder this user made
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                self._owner = None
                raise SandboxUnavailable(f"sandbox docker: {run_dir} is not this run's") from None
        loop = asyncio.get_running_loop()
        self._client_loaded = loop.run_in_executor(None, _load_client)
        self._watchdog = await Watchdog.start(self.run_token, run_dir)
        self._begun = loop.create_task(self._sweep_orphans(self._owner))

    async def _sweep_orphans(self, owner: Owner) -> None:
        removed = await remove_orphaned(owner)
        if removed:
            log.warning("removed %d container(s) left by a run that was killed", len(removed))

    def _start_task(self, key: ContainerKey, marker: str | None) -> asyncio.Task[Container]:
        task = asyncio.get_running_loop().create_task(self._start(key, marker))
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)
        return task

    def _run_dir(self) -> str:
        """The host folder of the run's containers' folders (the watchdog removes it if the
        harness dies); short, for the socket paths under it."""
        name = "axis-guest-" + hashlib.sha256(self.run_token.encode()).hexdigest()[:12]
        base = tempfile.gettempdir()
        longest = len(base) + len(f"/{name}/cXXXXXXXX/shared/{SOCKET_NAME}")
        return os.path.join(base if longest <= _SOCKET_PATH_MAX else "/tmp", name)

    def _labels(self, marker: str | None) -> dict[str, str]:
        assert self._owner is not None
        labels = {
            LABEL_RUN: self.run_token,
            LABEL_OWNER_PID: str(self._owner.pid),
            LABEL_OWNER: self._owner.label,
        }
        if marker is not None:
            labels[LABEL_JOB] = marker
        return labels

    def _spec(self, key: ContainerKey, name: str, shared: str, marker: str | None) -> ContainerSpec:
        config = key.config_dir
        read_only = [f for f in (config, *key.readable) if f != "/" and os.path.isdir(f)]
        writable = [f for f in key.writable if f != "/" and os.path.isdir(f)]
        mounted = [*read_only, *writable]
        hidden: list[str] = []
        for folder in (*self.hidden, os.path.join(config, ".axis")):
            folder = os.path.abspath(folder)
            inside = any(folder.startswith(m.rstrip("/") + "/") for m in mounted)
            if inside and os.path.isdir(folder) and folder not in hidden:
                hidden.append(folder)
        user = None if os.geteuid() == 0 else f"{os.geteuid()}:{os.getegid()}"
        return ContainerSpec(
            image=key.image,
            name=name,
            shared_dir=shared,
            labels=self._labels(marker),
            network=key.network,
            memory_mb=key.memory_mb,
            pids=key.pids,
            cpus=key.cpus,
            read_only=read_only,
            writable=writable,
            hidden=hidden,
            user=user,
        )

    async def _start(self, key: ContainerKey, marker: str | None) -> Container:
        name = f"axis-{safe_name(self.run_token)}-{next(self._serial)}"
        folder = tempfile.mkdtemp(prefix="c", dir=self._run_dir())
        shared = os.path.join(folder, "shared")
        try:
            os.mkdir(shared, 0o700)  # noqa: PTH102
            container = await start_container(self._spec(key, name, shared, marker))
        except ContainerFailed as exc:
            remove_tree(folder)
            raise SandboxUnavailable(f"sandbox docker: {exc}") from exc
        except BaseException:
            remove_tree(folder)
            raise
        self._live[container] = folder
        try:
            await self._wait_listening(container, shared)
            link = os.path.join(folder, SOCKET_NAME)
            os.link(os.path.join(shared, SOCKET_NAME), link)
            if self._client_loaded is not None:
                await asyncio.shield(self._client_loaded)
            from axis_eval.execute.guest import GuestClient

            client = await GuestClient.connect(unix_socket=link, timeout_s=CONNECT_TIMEOUT_S)
        except BaseException as exc:
            await asyncio.shield(self._remove(container))
            if isinstance(exc, SandboxUnavailable) or not isinstance(exc, Exception):
                raise
            raise SandboxUnavailable(
                f"sandbox docker: the runner in {key.image} did not answer: {exc}"
            ) from exc
        self._clients[container] = client
        return Container(container, name, folder, client, key.image)

    async def _wait_listening(self, container: str, shared: str) -> None:
        """Until the runner's socket appears: with ``--guest-services-only`` the runner
        makes it once its guest services answer, so the first call needs no retry. Polled
        every 5 ms (a wait on the folder would need inotify, which the standard library
        lacks; the poll costs the harness ~1 % of a core while a container starts). A
        container that stopped, or a runner that is late, is reported with what docker
        says of it."""
        socket_path = os.path.join(shared, SOCKET_NAME)
        loop = asyncio.get_running_loop()
        started = loop.time()
        next_check = started + 1.0
        while not os.path.exists(socket_path):
            now = loop.time()
            if now >= next_check:
                state = await container_state(container)
                if not state.startswith("running"):
                    raise SandboxUnavailable(
                        f"sandbox docker: the container stopped before its runner listened "
                        f"({_stopped_hint(state)}): {state}"
                    )
                if now - started > READY_TIMEOUT_S:
                    raise SandboxUnavailable(
                        f"sandbox docker: the runner did not listen within "
                        f"{READY_TIMEOUT_S:g}s: {state}"
                    )
                next_check = now + 1.0
            await asyncio.sleep(0.005 if now - started < 2.0 else 0.05)

    # -- removal

    async def discard(self, container: Container) -> None:
        """Remove one job's container (its processes die with it)."""
        with contextlib.suppress(Exception):
            await container.client.close()
        await asyncio.shield(self._remove(container.id))

    async def _remove(self, container: str) -> None:
        client = self._clients.pop(container, None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        folder = self._live.pop(container, None)
        await remove_containers([container])
        if folder is not None:
            remove_tree(folder)

    async def aclose(self) -> None:
        """Remove every container of the run (spares, leftovers of cancelled starts, and
        anything else labelled with the run); then let the watchdog go."""
        self._closed = True
        if self._owner is None:
            return
        if self._starting:
            await asyncio.wait(set(self._starting), timeout=READY_TIMEOUT_S)
        for task in self._spares.values():
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a spare that failed is no one's error
        self._spares.clear()
        if self._removing:
            await asyncio.wait(set(self._removing), timeout=READY_TIMEOUT_S)
        for client in list(self._clients.values()):  # spares, and jobs never closed
            with contextlib.suppress(Exception):
                await client.close()
        self._clients.clear()
        leftovers = list(self._live)
        await remove_containers(leftovers)
        for cid in leftovers:
            folder = self._live.pop(cid, None)
            if folder is not None:
                remove_tree(folder)
        await remove_run(self.run_token)
        if self._begun is not None:
            with contextlib.suppress(Exception):
                await self._begun
        if self._client_loaded is not None:
            with contextlib.suppress(Exception):
                await self._client_loaded
        late = any(not t.done() for t in self._starting)
        if not late:
            remove_tree(self._run_dir())
        if self._watchdog is not None:
            # A start still under way (a docker run past its wait) may yet create a
            # container: then the watchdog sweeps on (and removes the run's folder) after
            # this process has moved on.
            await self._watchdog.close(sweep=late)


def _load_client() -> None:
    for name in CLIENT_MODULES:
        importlib.import_module(name)


def _stopped_hint(state: str) -> str:
    """What a stopped container's log tail suggests (an image built before its runner had
    ``--guest-services-only`` refuses the flag)."""
    if "--guest-services-only" in state and "unrecognized arguments" in state:
        return (
            "the image's ax-task-runner is older than this axis-eval: rebuild it with "
            "`make build-agent-image`, or rebuild sandbox.image on the new one"
        )
    return "is the image's entrypoint ax-task-runner?"
