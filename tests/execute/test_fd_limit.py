"""The harness fits its concurrency to its file-descriptor limit and waits out EMFILE.

The limits are lowered in child processes only (``resource.setrlimit`` before exec), so
this test process keeps its own.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import resource
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from axis_eval.execute.process import (
    ProcessSpec,
    SpawnFailed,
    new_run_token,
    orphans,
    pidfd_child_watcher,
    reap_orphans,
    spawn,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def limited(soft: int, hard: int) -> Callable[[], None]:
    """A ``preexec_fn`` giving the child ``RLIMIT_NOFILE`` = (soft, hard)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return apply


def python(code: str, soft: int, hard: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limited(soft, hard),
    )


def write_project(root: Path, jobs: int) -> Path:
    (root / "scenarios").mkdir(parents=True)
    adapter = {"command": ["/bin/sh", "-c", "sleep 0.02; echo answer"], "args": []}
    config = {
        "name": "fds",
        "scenarios": "./scenarios",
        "agents": ["tiny"],
        "adapters": {"tiny": {**adapter, "output": "text"}},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    for n in range(jobs):
        scenario = {"name": f"s{n}", "prompt": "p", "judge": "j"}
        (root / "scenarios" / f"s{n}.json").write_text(json.dumps(scenario))
    return root


def test_a_run_far_above_the_descriptor_limit_throttles_and_every_job_succeeds(
    tmp_path: Path,
) -> None:
    """`ulimit -n 64` (soft and hard) and --concurrency 200: the run says once that it runs
    fewer jobs at once, and none fails with "Too many open files"."""
    root = write_project(tmp_path / "proj", 24)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "run", "--no-score", "--concurrency", "200"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limited(64, 64),
    )
    assert "Too many open files" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("concurrency lowered from 200 to ") == 1, done.stderr[-2000:]
    (report,) = (root / ".axis" / "reports").glob("*/report.json")
    summary = json.loads(report.read_text())["summary"]
    assert (summary["total"], summary["completed"], summary["failed"]) == (24, 24, 0)


def test_the_soft_limit_is_raised_when_the_hard_limit_allows() -> None:
    out = python(
        """
        import resource
        from axis_eval.execute.executor import LocalExecutor
        executor = LocalExecutor(100)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        print(executor.capacity, executor.notice, soft, hard)
        """,
        soft=64,
        hard=4096,
    )
    capacity, notice, soft, hard = out.stdout.split()
    assert (capacity, notice, hard) == ("100", "None", "4096"), out.stderr
    assert 100 * 8 < int(soft) < 4096  # as far as needed, not to the hard limit


def test_a_spawn_waits_for_descriptors_instead_of_failing() -> None:
    """Every descriptor in use: the spawn waits until some are closed, then starts."""
    out = python(
        """
        import asyncio, errno, os, time
        from axis_eval.execute.process import ProcessSpec, pidfd_child_watcher, spawn

        async def main():
            held = []
            try:
                while True:
                    held.append(os.open("/dev/null", os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE
            loop = asyncio.get_running_loop()
            loop.call_later(0.3, lambda: [os.close(fd) for fd in held[:20]])
            started = time.monotonic()
            spec = ProcessSpec(["/bin/sh", "-c", "echo ok"], "/", {"PATH": "/bin"}, "t/1")
            proc = await spawn(spec)
            line = await proc.stdout.readline()
            await proc.wait()
            await proc.stop(0)
            print(line.decode().strip(), round(time.monotonic() - started, 1) >= 0.3)

        with pidfd_child_watcher():
            asyncio.run(main())
        """,
        soft=64,
        hard=64,
    )
    assert out.stdout.split() == ["ok", "True"], out.stderr


def test_a_child_with_no_descriptor_left_for_its_pidfd_is_waited_for_by_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pidfd_open() meets EMFILE after the child started: the run's watcher falls back to
    a waiting thread, so the child's exit status still arrives."""

    def no_fd(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    async def main() -> int:
        monkeypatch.setattr(os, "pidfd_open", no_fd)
        marker = f"{new_run_token()}/job1"
        proc = await spawn(ProcessSpec(["/bin/sh", "-c", "exit 3"], "/", {}, marker))
        code = await asyncio.wait_for(proc.wait(), 10)
        await proc.stop(0)
        return code

    with pidfd_child_watcher():
        assert asyncio.run(main()) == 3


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12+ has no settable watcher")
def test_a_child_asyncio_could_not_watch_is_killed_and_not_started_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio's own pidfd watcher (what 3.12+ uses) failing after the fork: the child is
    killed and left to the orphan reaper, and the spawn fails at once rather than waiting
    to start the agent a second time."""
    policy = asyncio.get_event_loop_policy()
    previous = policy.get_child_watcher()

    def no_fd(pid: int, flags: int = 0) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    async def main() -> None:
        monkeypatch.setattr(os, "pidfd_open", no_fd)
        marker = f"{new_run_token()}/job1"
        spec = ProcessSpec(["/bin/sh", "-c", "exec sleep 30"], "/", {}, marker)
        with pytest.raises(SpawnFailed, match="Too many open files"):
            await asyncio.wait_for(spawn(spec), 5)  # a retry would wait up to 60 s
        for _ in range(200):
            reap_orphans()
            if orphans.adopted() == ([], []):
                break
            await asyncio.sleep(0.01)
        assert orphans.adopted() == ([], []), "the unwatched child was left behind"

    policy.set_child_watcher(asyncio.PidfdChildWatcher())
    try:
        asyncio.run(main())
    finally:
        policy.set_child_watcher(previous)
