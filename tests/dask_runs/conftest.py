"""A real Dask cluster on 127.0.0.1 for each test that asks: ``dask scheduler`` and
``dask worker`` processes started here (no nanny: killing a worker loses it), stopped (and
their process groups killed) afterwards.

Workers get the environment a test gives them: a job on a worker sees the worker's own
variables, never ``axis run``'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DASK = Path(sys.executable).parent / "dask"
START_TIMEOUT_S = 60.0


@dataclass
class DaskWorker:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def address(self) -> str:
        """Its address, from its log (asking the scheduler costs a Python start)."""
        found = re.search(r"Start worker at:\s+(\S+)", self.log.read_text(errors="replace"))
        assert found, self.log.read_text()
        return found.group(1)


@dataclass
class DaskCluster:
    """A scheduler and its workers, all this test's processes."""

    folder: Path
    address: str
    scheduler: subprocess.Popen[bytes]
    workers: list[DaskWorker] = field(default_factory=list)

    def start_worker(
        self,
        name: str,
        env: Mapping[str, str],
        *,
        slots: int = 4,
        resources: bool = True,
        preload: bool = False,
    ) -> DaskWorker:
        """Start one more worker (``resources``: it advertises ``slot=slots``; ``preload``:
        with ``--preload axis_eval.distributed.preload``) and wait until the scheduler has
        it."""
        log = self.folder / f"worker-{name}.log"
        args = [
            str(DASK), "worker", self.address, "--name", name, "--host", "127.0.0.1",
            "--nthreads", str(slots), "--no-nanny", "--no-dashboard",
            "--local-directory", str(self.folder / f"scratch-{name}"),
        ]  # fmt: skip
        if resources:
            args += ["--resources", f"slot={slots}"]
        if preload:
            args += ["--preload", "axis_eval.distributed.preload"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                args, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        worker = DaskWorker(name, proc, log)
        self.workers.append(worker)
        deadline = time.monotonic() + START_TIMEOUT_S
        # Its log says when the scheduler has it (asking the scheduler costs a Python start).
        while "Registered to:" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker {name} did not join: {log.read_text()}")
            time.sleep(0.1)
        return worker

    def wait_for(self, count: int) -> None:
        """Until the scheduler lists ``count`` workers."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if len(self.info()) >= count:
                return
            for worker in self.workers:
                if worker.proc.poll() is not None:
                    raise AssertionError(f"worker {worker.name} died: {worker.log.read_text()}")
            time.sleep(0.2)
        raise AssertionError(f"{count} workers did not join in {START_TIMEOUT_S:g} s")

    def info(self) -> dict[str, object]:
        """The scheduler's workers (from its scheduler file's view, through a client)."""
        done = subprocess.run(
            [sys.executable, "-c", _INFO, self.address],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return {}
        workers: dict[str, object] = json.loads(done.stdout)
        return workers

    def stop(self) -> None:
        for proc in [w.proc for w in self.workers] + [self.scheduler]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)


_INFO = """
import json, sys
from distributed import Client
with Client(sys.argv[1], timeout=10) as client:
    info = client.scheduler_info(n_workers=-1)
    print(json.dumps({a: w.get("resources", {}) for a, w in info["workers"].items()}))
"""


def dask_env(**extra: str) -> dict[str, str]:
    """A worker's or scheduler's environment: this process's, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(extra)
    return env


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    """A scheduler on 127.0.0.1 (no workers yet: each test starts its own)."""
    yield from _cluster(tmp_path / "dask")


@pytest.fixture
def second_cluster(tmp_path: Path) -> Iterator[DaskCluster]:
    """Another scheduler (a test that loses its first cluster resumes on this one)."""
    yield from _cluster(tmp_path / "dask-2")


def _cluster(folder: Path) -> Iterator[DaskCluster]:
    folder.mkdir()
    scheduler_file = folder / "scheduler.json"
    log = folder / "scheduler.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)],
            env=dask_env(), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    while not scheduler_file.exists() or not scheduler_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"the scheduler did not start: {log.read_text()}")
        time.sleep(0.1)
    time.sleep(0.1)  # the file is written whole, but let the writer finish
    address = json.loads(scheduler_file.read_text())["address"]
    assert address.startswith("tcp://127.0.0.1:"), address
    cluster = DaskCluster(folder, address, proc)
    try:
        yield cluster
    finally:
        cluster.stop()
