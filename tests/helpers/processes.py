"""Waiting on processes and files in tests that run axis or agents as real processes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
