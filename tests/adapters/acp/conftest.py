"""Helpers for the ACP tests: tiny projects, runs through `axis run`, process checks."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from helpers.processes import alive


@pytest.fixture
def pids_to_kill() -> Iterator[list[int]]:
    """Pids a test saw; any still alive at teardown are killed so a failure cannot leak."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, 9)
            except OSError:
                pass
