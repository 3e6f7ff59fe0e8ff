"""Waiting on processes and files in tests that run axis or agents as real processes."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def wait_for(
    predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.05, what: str = ""
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    state = raw.rpartition(b")")[2].split()[0]
    return state not in (b"Z", b"X")


def wait_dead(pids: list[int], timeout: float = 5.0) -> None:
    """Fail unless every pid is gone (or a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            left = [p for p in pids if alive(p)]
            raise AssertionError(f"processes still alive after {timeout}s: {left}")
        time.sleep(0.05)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def first_json_line(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> Any:
    """The first line ``proc`` prints on stdout, as JSON; if it prints nothing in time, the
    test fails with its stderr (the process is killed)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    if not line:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"{proc.args!r} printed nothing: {err.decode(errors='replace')}")
    return json.loads(line)


def processes_with(token: str) -> list[tuple[int, str]]:
    """Every live process on the machine whose command line holds ``token`` (pid, argv)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and alive(int(name)):
            found.append((int(name), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found
