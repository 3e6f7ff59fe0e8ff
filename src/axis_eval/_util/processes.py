"""One-shot helper processes (Node for ``.js`` configs, ``git``): bounded, grouped, killed whole.

Agent processes are managed by :mod:`axis_eval.execute.process`; this module only runs
short, synchronous helper commands that must finish before the pipeline continues.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Completed:
    """What a finished helper process left behind."""

    returncode: int
    stdout: str
    stderr: str


class HelperTimeout(Exception):
    """The helper process ran past its time limit and was killed with its group."""


def run_helper(
    argv: list[str],
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    input_text: str | None = None,
    timeout_s: float = 60.0,
) -> Completed:
    """Run ``argv`` in its own process group and wait; on timeout kill the whole group."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise HelperTimeout(f"{argv[0]} did not finish within {timeout_s:g}s") from exc
    return Completed(proc.returncode, out, err)
