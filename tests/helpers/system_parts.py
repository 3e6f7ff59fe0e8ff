"""The one policy for tests that need a system part (a browser, Docker, an agent CLI, …).

Where the part is missing the test is skipped with a loud line on stderr, except under
``CI=true``, where it fails: CI installs every part, so a missing one is a broken setup.
Test modules import it as ``system_parts`` (``tests/`` is on the path through its
conftest).
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import pytest


def not_run(what: str, reason: str) -> NoReturn:
    """Skip loudly (``!!! <WHAT> NOT RUN: <reason>``), or fail under ``CI=true``."""
    message = f"!!! {what} NOT RUN: {reason}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    print(message, file=sys.stderr)
    pytest.skip(message)


def auto_sandbox() -> str:
    """The sandbox ``auto`` gives a job here: ``bwrap`` where it works (always under
    ``CI=true``, which installs it: a CI machine without it fails the tests that ask)."""
    from axis_eval.execute.sandbox.probe import bwrap_problem

    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"!!! BWRAP SANDBOX NOT AVAILABLE under CI=true: {problem}")
    print(f"!!! BWRAP SANDBOX NOT RUN: {problem}; jobs run under none", file=sys.stderr)
    return "none"
