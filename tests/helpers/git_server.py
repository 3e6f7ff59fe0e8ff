"""Local git repositories for the tests of remote scenarios, GitHub skills and ``copy``
from git URLs (no test reaches the internet).

:class:`GitServer` runs ``git daemon --listen=127.0.0.1`` over a folder of bare
repositories (:func:`serving`: started for one test, its GitHub mapping in the
environment); :meth:`Repo.local` is a bare repository reached through ``file://``, no
server. :func:`github_env` is the environment (``GIT_CONFIG_COUNT`` …, git's
``url.<base>.insteadOf``) under which ``https://github.com/<owner>/<repo>`` resolves to
``<base><owner>/<repo>``, so configs name GitHub as users write them. :func:`refusing_url`
is a URL on a port of 127.0.0.1 where nothing listens (unreachable).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers import system_parts

_IDENTITY = {
    "GIT_AUTHOR_NAME": "axis-tests",
    "GIT_AUTHOR_EMAIL": "axis-tests@example.invalid",
    "GIT_COMMITTER_NAME": "axis-tests",
    "GIT_COMMITTER_EMAIL": "axis-tests@example.invalid",
}


def need_git() -> None:
    """Skip loudly without git (fail under ``CI=true``)."""
    if shutil.which("git") is None:
        system_parts.not_run("GIT", "git is not installed")


def git(*args: str, cwd: Path | None = None) -> str:
    """Run a git command for the test's own setup; its stdout."""
    env = {**os.environ, **_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=30, check=False
    )
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refusing_url(path: str = "nobody/nothing") -> str:
    """A git URL on 127.0.0.1 where nothing listens."""
    return f"git://127.0.0.1:{free_port()}/{path}"


def github_env(base_url: str) -> dict[str, str]:
    """git configuration through the environment: ``https://github.com/`` means ``base_url``
    (a ``file://`` base also opts in to git's ``file`` protocol, which AXIS otherwise
    forbids: ``AXIS_GIT_ALLOW_PROTOCOL``)."""
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{base_url}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/",
    }
    if base_url.startswith("file://"):
        env["AXIS_GIT_ALLOW_PROTOCOL"] = "file"
    return env


class Repo:
    """A bare repository ``<root>/<owner>/<name>.git`` with a work tree to commit to it."""

    def __init__(self, root: Path, owner: str, name: str, base_url: str) -> None:
        self.owner = owner
        self.name = name
        self.base_url = base_url
        self.bare = root / owner / f"{name}.git"
        self.work = root.parent / f"{root.name}-work" / owner / name
        self.bare.parent.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        self.work.mkdir(parents=True, exist_ok=True)
        git("init", "--quiet", "--initial-branch=main", str(self.work))
        git("remote", "add", "origin", str(self.bare), cwd=self.work)

    @classmethod
    def local(cls, root: Path, owner: str, name: str) -> Repo:
        """A repository reached through ``file://`` (no server)."""
        root.mkdir(parents=True, exist_ok=True)
        return cls(root, owner, name, f"file://{root}/")

    @property
    def url(self) -> str:
        """Its URL (``git://127.0.0.1:<port>/<owner>/<name>`` when served)."""
        return f"{self.base_url}{self.owner}/{self.name}"

    @property
    def github_url(self) -> str:
        """``https://github.com/<owner>/<name>`` (resolves here under :func:`github_env`)."""
        return f"https://github.com/{self.owner}/{self.name}"

    def commit(self, files: Mapping[str, str | Mapping[str, Any]], message: str = "c") -> str:
        """Write ``files`` (text, or a dict written as JSON), commit, push; the commit id."""
        for rel, body in files.items():
            path = self.work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body if isinstance(body, str) else json.dumps(body, indent=2))
        git("add", "-A", cwd=self.work)
        git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        git("push", "--quiet", "origin", "HEAD:main", cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work)

    def link(self, rel: str, target: str) -> None:
        """A symlink ``rel`` -> ``target`` in the work tree (committed by the next
        :meth:`commit`): what a hostile repository holds."""
        path = self.work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target)

    def tag(self, name: str) -> None:
        git("tag", name, cwd=self.work)
        git("push", "--quiet", "origin", name, cwd=self.work)

    def branch(self, name: str) -> None:
        """Push the current commit as branch ``name`` too."""
        git("push", "--quiet", "origin", f"HEAD:refs/heads/{name}", cwd=self.work)


class GitServer:
    """``git daemon`` on 127.0.0.1 serving every bare repository under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"git://127.0.0.1:{self.port}/"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--informative-errors",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                f"--base-path={self.root}",
                str(self.root),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError("git daemon did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=10)

    def repo(self, owner: str, name: str) -> Repo:
        return Repo(self.root, owner, name, self.base_url)

    def github_env(self) -> dict[str, str]:
        """GitHub URLs resolve to this daemon."""
        return github_env(self.base_url)


@contextlib.contextmanager
def serving(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitServer]:
    """A running daemon over ``root``, whose GitHub mapping is in this process's
    environment (and so in every ``git`` axis runs, and in child ``axis`` processes given
    ``os.environ``). Test modules wrap it in a fixture."""
    need_git()
    server = GitServer(root)
    server.start()
    for name, value in server.github_env().items():
        monkeypatch.setenv(name, value)
    try:
        yield server
    finally:
        server.stop()
