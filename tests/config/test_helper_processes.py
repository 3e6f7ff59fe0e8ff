"""``run_helper``, which runs Node for ``.js`` files (and npm, and ``--version`` probes):
whatever ends the wait, the helper's whole process group goes with it."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from axis_eval._util.processes import HelperOutputTooLarge, HelperTimeout, run_helper


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)  # do not leave it behind on the shared machine
        return False
    return True


def test_output_exit_code_and_no_stdin() -> None:
    code = "import sys; d = sys.stdin.read(); print(repr(d), 'x' * 200_000); sys.exit(4)"
    done = run_helper([sys.executable, "-c", code])  # more than a pipe holds: read as written
    assert done.returncode == 4
    assert done.stdout.strip() == "'' " + "x" * 200_000  # stdin is empty, never a terminal


def test_output_that_is_not_utf8_is_replaced_not_an_error() -> None:
    done = run_helper([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'a\\xffb')"])
    assert done.stdout == "a\ufffdb"


def test_what_the_helper_left_running_is_killed_when_it_exits() -> None:
    done = run_helper(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], timeout_s=20)
    assert gone_soon(int(done.stdout))


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(HelperTimeout, match="did not finish within 1s"):
        run_helper(["sh", "-c", f"sleep 60 & echo $! > {tmp_path}/pid; wait"], timeout_s=1.0)
    assert time.monotonic() - started < 5
    assert gone_soon(int((tmp_path / "pid").read_text()))


def test_too_much_output_kills_the_helper_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(HelperOutputTooLarge):
        run_helper(["yes"], max_output_bytes=1 << 20, timeout_s=30)
    assert time.monotonic() - started < 10


def test_stderr_past_the_cap_is_dropped_not_an_error() -> None:
    code = "import sys; sys.stderr.write('e' * 3_000_000); print('ok')"
    done = run_helper([sys.executable, "-c", code], max_output_bytes=1 << 20)
    assert done.stdout.strip() == "ok" and len(done.stderr) == 1 << 20
