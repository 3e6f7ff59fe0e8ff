"""ax-task-runner as a real process on 127.0.0.1: start it, probe it, stop or kill it.

Also real git repositories served by ``file://`` URL, and a git wrapper that records every
call (and can be slow on purpose) put first on the runner's PATH.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    GIT_WRAPPER,
    REAL_GIT,
    GitWrapper,
    RunnerProc,
    free_port,
    runner_argv,
    write_yaml,
)


@pytest.fixture
def git_wrapper(tmp_path: Path) -> GitWrapper:
    folder = tmp_path / "gitbin"
    folder.mkdir()
    script = folder / "git"
    script.write_text(GIT_WRAPPER.format(git=REAL_GIT))
    script.chmod(0o755)
    return GitWrapper(folder, tmp_path / "git-calls.log")


@pytest.fixture
def start_runner(tmp_path: Path) -> Iterator[Callable[..., RunnerProc]]:
    """``start_runner(task=…, workspaces=[…], env={…}, args=[…])`` → a running runner.

    ``task``/``workspaces`` are dicts, lists of dicts, YAML text or paths; they are given
    as ``--task-file``/``--workspace-file`` unless ``via_env`` (then AX_TASK_YAML/…).
    """
    started: list[RunnerProc] = []
    counter = [0]

    def start(
        *,
        task: Any = None,
        workspaces: list[Any] | None = None,
        env: Mapping[str, str] | None = None,
        args: list[str] | None = None,
        root: Path | None = None,
        state: Path | None = None,
        via_env: bool = False,
        wrap: list[str] | None = None,
        base_env: Mapping[str, str] | None = None,
    ) -> RunnerProc:
        counter[0] += 1
        n = counter[0]
        root = root or tmp_path / "volume"
        state = state or tmp_path / "ax"
        port = free_port()
        run_env = dict(base_env if base_env is not None else os.environ)
        run_env.pop("AX_TASK_YAML", None)
        run_env.pop("AX_WORKSPACES_YAML", None)
        run_env.update(env or {})
        argv = [
            *(wrap or []),
            *runner_argv(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workspace-root",
            str(root),
            "--state-dir",
            str(state),
            "--git-retry-delay",
            "0.2",
        ]
        if task is not None:
            if isinstance(task, Path):
                task_text = task.read_text()
            else:
                task_text = write_yaml(tmp_path / f"task-{n}.yaml", task).read_text()
            if via_env:
                run_env["AX_TASK_YAML"] = task_text
            else:
                argv += [
                    "--task-file",
                    str(task if isinstance(task, Path) else tmp_path / f"task-{n}.yaml"),
                ]
        for i, ws in enumerate(workspaces or []):
            path = ws if isinstance(ws, Path) else write_yaml(tmp_path / f"ws-{n}-{i}.yaml", ws)
            if via_env:
                run_env["AX_WORKSPACES_YAML"] = (
                    run_env.get("AX_WORKSPACES_YAML", "") + "\n---\n" + path.read_text()
                )
            else:
                argv += ["--workspace-file", str(path)]
        argv += args or []
        log_path = tmp_path / f"runner-{n}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=run_env,
                start_new_session=True,
            )
        runner = RunnerProc(proc, port, root, state, log_path)
        started.append(runner)
        return runner

    yield start
    for runner in started:
        if runner.proc.poll() is None:
            runner.kill_session()
