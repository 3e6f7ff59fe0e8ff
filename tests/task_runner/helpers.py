"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


REPO = HERE.parents[1]


SPECS = HERE / "specs"


REAL_GIT = "/usr/bin/git" if Path("/usr/bin/git").exists() else "git"


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [REAL_GIT, *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def make_repo(
    path: Path, commits: list[dict[str, str]], *, branches: Mapping[str, dict[str, str]] = {}
) -> str:
    """A repository on ``main`` with one commit per dict (file → text); returns its file:// URL.

    ``branches`` adds branches off the last main commit, each with one more commit.
    """
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    for i, files in enumerate(commits):
        for name, text in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)
        git("add", "-A", cwd=path)
        git("commit", "-q", "-m", f"commit {i}", cwd=path)
    for branch, files in branches.items():
        git("checkout", "-q", "-b", branch, cwd=path)
        for name, text in files.items():
            (path / name).write_text(text)
        git("add", "-A", cwd=path)
        git("commit", "-q", "-m", f"on {branch}", cwd=path)
        git("checkout", "-q", "main", cwd=path)
    return f"file://{path}"


GIT_WRAPPER = """#!/bin/sh
# Records every git call; sleeps (or pretends to die mid-way) when asked to.
echo "$PWD|$*" >> "$GIT_WRAPPER_LOG"
case "$*" in
  *" $GIT_SLOW_VERB "*|*" $GIT_SLOW_VERB")
    case "$PWD" in
      *"$GIT_SLOW_DIR")
        if [ -n "$GIT_SLOW_LOCK" ]; then touch .git/index.lock; fi
        sleep "$GIT_SLOW_SECONDS";;
    esac;;
esac
exec {git} "$@"
"""


@dataclass
class GitWrapper:
    """A ``git`` first on PATH that logs calls; set ``slow`` to delay one verb in one dir."""

    folder: Path
    log: Path

    def env(
        self, *, verb: str = "", directory: str = "", seconds: float = 0, lock: bool = False
    ) -> dict[str, str]:
        return {
            "PATH": f"{self.folder}:{os.environ['PATH']}",
            "GIT_WRAPPER_LOG": str(self.log),
            "GIT_SLOW_VERB": verb or "no-such-verb",
            "GIT_SLOW_DIR": directory or "/no/such/dir",
            "GIT_SLOW_SECONDS": str(seconds),
            "GIT_SLOW_LOCK": "1" if lock else "",
        }

    def calls(self) -> list[tuple[str, str]]:
        if not self.log.exists():
            return []
        return [tuple(line.split("|", 1)) for line in self.log.read_text().splitlines()]  # type: ignore[misc]

    def reset(self) -> None:
        self.log.unlink(missing_ok=True)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def yaml_docs(self) -> list[Any]:
        return [d for d in yaml.safe_load_all(self.text) if d is not None]

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RunnerProc:
    """A runner process in its own session, logging to a file."""

    proc: subprocess.Popen[bytes]
    port: int
    root: Path
    state: Path
    log_path: Path
    started: float = field(default_factory=time.monotonic)

    def get(self, path: str, method: str = "GET", timeout: float = 5.0) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path)
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def wait_for(self, check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except OSError:
                pass
            if self.proc.poll() is not None and not check_quiet(check):
                raise AssertionError(
                    f"runner exited ({self.proc.returncode}) before {what}:\n{self.logs()}"
                )
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}:\n{self.logs()}")

    def wait_healthy(self, timeout: float = 10.0) -> None:
        self.wait_for(lambda: self.get("/healthz").status == 200, "/healthz", timeout)

    def wait_ready(self, timeout: float = 20.0, path: str = "/readyz") -> None:
        self.wait_for(lambda: self.get(path).status == 200, path, timeout)

    def wait_log(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        found: list[re.Match[str]] = []

        def check() -> bool:
            match = re.search(pattern, self.logs())
            if match:
                found.append(match)
            return match is not None

        self.wait_for(check, f"log {pattern!r}", timeout)
        return found[0]

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get("/metadata/v1alpha1/ax/status").json()
        return result

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM the runner (as AX's stop does) and wait for its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill_session(self) -> None:
        """SIGKILL every process of the runner's session: a container dying."""
        sid = self.proc.pid
        for pid in _pids():
            try:
                if os.getsid(pid) == sid:
                    os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.proc.wait(10)


def check_quiet(check: Callable[[], bool]) -> bool:
    try:
        return check()
    except OSError:
        return False


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def write_yaml(path: Path, docs: Any) -> Path:
    if isinstance(docs, str):
        path.write_text(docs)
    elif isinstance(docs, list):
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    else:
        path.write_text(yaml.safe_dump(docs, sort_keys=False))
    return path


def runner_argv() -> list[str]:
    return [sys.executable, "-m", "ax_task_runner"]


def task_doc(name: str = "t", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": name},
        "spec": spec,
    }


def workspace_doc(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
        "spec": spec,
    }


def py_command(code: str) -> list[str]:
    """``spec.command`` running a Python snippet with this interpreter."""
    return [sys.executable, "-c", code]
