"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from .client import free_port, http_get

REPO = Path(__file__).resolve().parents[3]


SPEC_VAR = ("GUEST_SPEC_VAR", "from-spec-env")


@dataclass
class Runner:
    port: int
    workspace: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _task(debug: bool) -> dict[str, Any]:
    return {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": "guest-test", "atespace": "default"},
        "spec": {
            "env": [{"name": SPEC_VAR[0], "value": SPEC_VAR[1]}],
            "workspaces": [{"name": "code"}],
            "debug": debug,
        },
    }


@contextlib.contextmanager
def run_runner(tmp: Path, *, debug: bool) -> Iterator[Runner]:
    tmp.mkdir(parents=True, exist_ok=True)
    task_file = tmp / "task.yaml"
    task_file.write_text(yaml.safe_dump(_task(debug), sort_keys=False))
    root, state = tmp / "root", tmp / "state"
    root.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    port = free_port()
    log = tmp / "runner.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AX_", "GEMINI_"))}
    env["PYTHONUNBUFFERED"] = "1"
    argv = [sys.executable, "-m", "ax_task_runner", "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--task-file", str(task_file), "--workspace-root", str(root)]
    argv += ["--state-dir", str(state)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp)
    runner = Runner(port=port, workspace=root / "code", proc=proc, log=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                pytest.fail(f"runner exited {proc.returncode}:\n{runner.log_text()}")
            with contextlib.suppress(OSError):
                # Ready, and the guest handler mounted (the runner logs it either way).
                if http_get(runner.url("/readyz?check=workspace"))[0] == 200 and (
                    "guest services" in runner.log_text()
                ):
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"runner not ready after 30 s:\n{runner.log_text()}")
            time.sleep(0.05)
        yield runner
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
