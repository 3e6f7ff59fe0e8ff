"""A real ``ax-task-runner`` on this host (a subprocess), serving its guest services on a
Unix socket, for the guest-service client (no Docker needed)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

SPEC_VAR = ("GUEST_SPEC_VAR", "from-spec-env")
"""In the Task's ``spec.env``: the runner's own environment has it."""


@dataclass
class GuestRunner:
    socket: str
    workspace: Path
    extra_root: Path
    """A second folder given with ``--files-root`` (the main runner only)."""
    outside: Path
    """A folder outside every root."""
    proc: subprocess.Popen[bytes]
    log: Path


def _task(debug: bool = True) -> dict[str, object]:
    return {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": "guest-client-test", "atespace": "default"},
        "spec": {
            "env": [{"name": SPEC_VAR[0], "value": SPEC_VAR[1]}],
            "workspaces": [{"name": "code"}],
            "debug": debug,
        },
    }


@contextlib.contextmanager
def run_runner(tmp: Path, *options: str) -> Iterator[GuestRunner]:
    """The runner on ``tmp/g.sock``; ``options`` are more flags (``{extra}`` is replaced by
    the extra root's path)."""
    task = tmp / "task.yaml"
    task.write_text(yaml.safe_dump(_task(), sort_keys=False))
    extra, outside = tmp / "extra", tmp / "outside"
    extra.mkdir()
    outside.mkdir()
    log = tmp / "runner.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AX_", "GEMINI_"))}
    env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-m", "ax_task_runner", "--unix-socket", str(tmp / "g.sock")]
    argv += ["--task-file", str(task), "--workspace-root", str(tmp / "root")]
    argv += ["--state-dir", str(tmp / "state")]
    argv += [o.replace("{extra}", str(extra)) for o in options]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    try:
        yield GuestRunner(str(tmp / "g.sock"), tmp / "root" / "code", extra, outside, proc, log)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestRunner]:
    """Guest processes get exactly the request's env; files confined to two roots."""
    tmp = tmp_path_factory.mktemp("guest")
    with run_runner(
        tmp, "--guest-env", "empty", "--files-root", str(tmp / "root"), "--files-root", "{extra}"
    ) as runner:
        yield runner


@pytest.fixture(scope="module")
def plain_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuestRunner]:
    """The defaults (processes get the runner's env plus the request's), files unconfined."""
    with run_runner(tmp_path_factory.mktemp("guestplain"), "--no-confine-files") as runner:
        yield runner
