"""PID-1 duties with real processes: SIGTERM forwarding, the grace kill, zombie reaping."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.system_parts import not_run

from .helpers import RunnerProc, py_command, task_doc

TRAPS_TERM = """
import os, signal, subprocess, sys, time
out = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", '''
import signal, sys, time
def bye(*_):
    open(sys.argv[1] + ".child", "w").write("TERM"); sys.exit(0)
signal.signal(signal.SIGTERM, bye)
open(sys.argv[1] + ".childready", "w").write("ok")
time.sleep(60)
''', out])
while not os.path.exists(out + ".childready"):
    time.sleep(0.01)
def bye(*_):
    open(out, "w").write("TERM")
    child.wait()
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
open(out + ".ready", "w").write(str(child.pid))
time.sleep(60)
"""

IGNORES_TERM = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # inherits SIG_IGN
open(sys.argv[1], "w").write(f"{os.getpid()} {child.pid}")
time.sleep(60)
"""


def _wait_file(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_sigterm_is_forwarded_to_the_group(start_runner: Any, tmp_path: Path) -> None:
    out = tmp_path / "term.txt"
    runner = start_runner(task=task_doc(command=[*py_command(TRAPS_TERM), str(out)]))
    _wait_file(Path(f"{out}.ready"))
    started = time.monotonic()
    assert runner.terminate() == 0
    assert time.monotonic() - started < 5
    assert out.read_text() == "TERM" and Path(f"{out}.child").read_text() == "TERM"
    logs = runner.logs()
    assert 'msg="received signal; stopping" signal=SIGTERM' in logs
    assert 'msg="stopping task command"' in logs
    assert "task command completed successfully" in logs
    assert "did not exit within grace period" not in logs
    assert logs.index("task command completed successfully") < logs.index(
        "shutting down metadata server"
    )


def test_grace_period_then_sigkill(start_runner: Any, tmp_path: Path) -> None:
    out = tmp_path / "pids.txt"
    runner = start_runner(
        task=task_doc(command=[*py_command(IGNORES_TERM), str(out)]), args=["--stop-grace", "1"]
    )
    leader, child = (int(p) for p in _wait_file(out).split())
    started = time.monotonic()
    assert runner.terminate() == 0
    took = time.monotonic() - started
    assert 1.0 <= took < 5, took
    assert not _alive(leader) and not _alive(child)
    logs = runner.logs()
    assert "task command did not exit within grace period; killing" in logs
    assert 'msg="task command exited with error"' in logs and "exitCode=-1" in logs
    assert 'error="signal: killed"' in logs


ORPHANS = """
import os, subprocess, sys, time
# Three orphans that exit soon: reparented to PID 1, they become zombies until reaped.
ORPHAN = "import os, time\\nif os.fork() == 0:\\n    time.sleep(0.3)\\n    os._exit(0)"
for _ in range(3):
    subprocess.Popen([sys.executable, "-c", ORPHAN]).wait()
time.sleep(2.5)
sys.exit(7)
"""


def _unshare_works() -> str | None:
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare is not installed"
    done = subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", "sh", "-c", "test $$ = 1"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    if done.returncode != 0:
        return f"unshare --pid --fork --mount-proc does not work here: {done.stderr.strip()}"
    return None


def _children(pid: int) -> list[tuple[int, str]]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append((int(name), fields[0]))
    return out


def test_zombies_are_reaped_as_pid_1(start_runner: Any, tmp_path: Path) -> None:
    reason = _unshare_works()
    if reason is not None:
        not_run("PID-1 REAPING TEST", reason)
    runner: RunnerProc = start_runner(
        task=task_doc(command=py_command(ORPHANS)),
        wrap=["unshare", "--pid", "--fork", "--mount-proc"],
    )
    runner.wait_healthy()
    deadline = time.monotonic() + 5
    inner: int | None = None
    while inner is None and time.monotonic() < deadline:
        kids = _children(runner.proc.pid)  # unshare's child is the runner, PID 1 inside
        inner = kids[0][0] if kids else None
        time.sleep(0.02)
    assert inner is not None
    with open(f"/proc/{inner}/status") as handle:
        nspid = next(line for line in handle if line.startswith("NSpid:")).split()
    assert nspid[-1] == "1", nspid  # really PID 1 in its namespace
    adopted: set[int] = set()
    zombies_seen: dict[int, float] = {}
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        for pid, state in _children(inner):
            adopted.add(pid)
            if state == "Z":
                zombies_seen.setdefault(pid, time.monotonic())
        time.sleep(0.02)
    assert len(adopted) >= 4, adopted  # the command plus the orphans it left
    assert all(state != "Z" for _, state in _children(inner)), _children(inner)
    # The command's own status was not stolen by the reaper.
    runner.wait_log(
        r'msg="task command exited with error" pid=\d+ exitCode=7 error="exit status 7"'
    )
    assert runner.status()["exitCode"] == 7
    # unshare ignores SIGTERM while it waits; a PID 1 only gets the signals it handles.
    os.kill(inner, signal.SIGTERM)
    assert runner.proc.wait(20) == 0
    assert "received signal; stopping" in runner.logs()


def test_command_that_cannot_start_leaves_the_runner_up(start_runner: Any, tmp_path: Path) -> None:
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    runner = start_runner(task=task_doc(command=[str(script)]))
    runner.wait_log("task command failed to start")
    assert runner.status() == {
        "idleSeconds": runner.status()["idleSeconds"],
        "inFlight": 0,
        "busy": False,
        "exited": True,
        "exitCode": 126,
    }
    assert runner.get("/healthz").status == 200
    assert runner.terminate() == 0


async def test_helpers_merge_output_and_are_killed_on_timeout(tmp_path: Path) -> None:
    from ax_task_runner.supervisor import run_helper

    done = await run_helper(
        ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], cwd=str(tmp_path), env={}
    )
    assert (done.returncode, done.output) == (3, "out\nerr\n")
    started = time.monotonic()
    pidfile = tmp_path / "sleep.pid"
    with pytest.raises(TimeoutError):
        await run_helper(
            ["/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"],
            cwd=str(tmp_path),
            env={},
            timeout_s=0.5,
        )
    assert time.monotonic() - started < 5
    assert not _alive(int(_wait_file(pidfile)))  # the helper's whole group was killed


async def test_spawn_errors_keep_the_runners_wording(tmp_path: Path) -> None:
    from ax_task_runner.supervisor import SpawnError, start_process

    with pytest.raises(SpawnError, match=r"^executable file not found: axis-no-such") as info:
        await start_process(["axis-no-such"], cwd=str(tmp_path), env={})
    assert info.value.exit_code == 127
    missing = tmp_path / "missing"
    with pytest.raises(
        SpawnError, match=f"^cannot use working directory {re.escape(str(missing))}: "
    ) as info:
        await start_process(["/bin/true"], cwd=str(missing), env={})
    assert info.value.exit_code == 126
    script = tmp_path / "not-executable.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(SpawnError, match=r"^cannot start .*: Permission denied$") as info:
        await start_process([str(script)], cwd=str(tmp_path), env={})
    assert info.value.exit_code == 126
    with pytest.raises(SpawnError, match=r"^empty command$"):
        await start_process([], cwd=str(tmp_path), env={})
    with pytest.raises(ValueError, match="unsupported stdio"):
        await start_process(["/bin/true"], cwd=str(tmp_path), env={}, stdout=None)
