"""Helpers for the end-to-end `axis run` tests: tiny projects, real runs, process checks."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.processes import alive

from .helpers import Procs, job_processes


@pytest.fixture
def procs() -> Iterator[Procs]:
    """Tracks child processes and agent pids; kills leftovers so a failure cannot leak them."""
    tracked = Procs()
    yield tracked
    for proc in tracked.popen:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    for pid in tracked.pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture(autouse=True)
def no_leftover_processes(tmp_path: Path) -> Iterator[None]:
    """After each test, no process of its jobs may be left running (checked for 5 s).

    Jobs are found by their environment on the host: under bwrap too (bwrap and everything
    in its namespaces carry the job's environment and have host pids too)."""
    yield
    deadline = time.monotonic() + 5.0
    while (left := job_processes(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"job processes outlived the test: {left}"


@pytest.fixture
def e2e_dir(tmp_path: Path) -> Path:
    """A folder outside the project that agents write their pid/env files to."""
    folder = tmp_path / "e2e-out"
    folder.mkdir()
    return folder
