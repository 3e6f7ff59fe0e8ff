"""A native built-in runs as an unprivileged user (a created one when the tests run as root)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from axis_model_server import ScriptedModelServer, parse_tape

from .helpers import (
    CODEX_MODEL,
    FAKE_KEY,
    REPO,
    TRAP_VARS,
    read_report,
    shell_tape,
    unavailable,
    write_project,
)

pytestmark = pytest.mark.slow  # drives a real agent CLI against the scripted model server

USER = "axis-agent-test"


def _ensure_user() -> str | None:
    """The unprivileged user to run as: None means "this process already is one"."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(USER)
    except KeyError:
        useradd = shutil.which("useradd")
        if useradd is None or shutil.which("runuser") is None:
            unavailable("running as root, but useradd/runuser are missing")
        done = subprocess.run(
            [str(useradd), "--system", "--no-create-home", "--shell", "/bin/sh", USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 9):  # 9: the user exists (a parallel run made it)
            unavailable(f"useradd {USER} failed: {done.stderr.strip()}")
    return USER


def _open_to_others(path: Path) -> bool:
    """Whether every folder above ``path`` (symlinks resolved) lets other users through."""
    real = path.resolve()
    return all(parent.stat().st_mode & 0o001 for parent in real.parents)


def _python_for_others() -> tuple[str, dict[str, str]]:
    """A Python interpreter another user can start, and the PYTHONPATH it needs.

    The venv's interpreter may live under /root (pyenv); then a system Python of the same
    minor version runs with the venv's site-packages and the source folder on its path.
    """
    if _open_to_others(Path(sys.executable)):
        return sys.executable, {}
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for folder in ("/usr/bin", "/usr/local/bin"):
        candidate = Path(folder) / minor
        if candidate.exists() and _open_to_others(candidate):
            paths = [str(REPO / "src"), sysconfig.get_paths()["purelib"]]
            return str(candidate), {"PYTHONPATH": os.pathsep.join(paths)}
    unavailable(f"no {minor} that an unprivileged user can run ({sys.executable} is private)")
    raise AssertionError("unreachable")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the unprivileged user can use (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="axis-unpriv-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_agent_runs_as_an_unprivileged_user(
    agent: str, shared_dir: Path, request: pytest.FixtureRequest
) -> None:
    request.getfixturevalue("claude_cli" if agent == "claude-code" else "codex_cli")
    user = _ensure_user()
    command = "id -u > uid.txt && echo hello > out.txt && cat out.txt"
    with ScriptedModelServer(parse_tape(shell_tape(command, "Done."))) as server:
        entry = {"agent": agent, "endpoint": server.url}
        if agent == "codex":
            entry["model"] = CODEX_MODEL
        root = write_project(
            shared_dir / "project",
            entry,
            "Create out.txt containing hello",
            env=TRAP_VARS,
            artifacts=["out.txt", "uid.txt"],
        )
        home, tmp = shared_dir / "home", shared_dir / "tmp"
        home.mkdir()
        tmp.mkdir()
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "AXIS_AGENTS_DIR": os.environ["AXIS_AGENTS_DIR"],
            "ANTHROPIC_API_KEY": FAKE_KEY,
            "CODEX_API_KEY": FAKE_KEY,
            "HTTPS_PROXY": server.url,
            "HTTP_PROXY": server.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "PYTHONDONTWRITEBYTECODE": "1",
            "NO_COLOR": "1",
        }
        argv = [sys.executable, "-m", "axis_eval", "run", "-c", str(root), "--no-score"]
        if user is not None:
            python, extra = _python_for_others()
            argv[0] = python
            env.update(extra)
            subprocess.run(["chown", "-R", f"{user}:", str(shared_dir)], check=True)
            argv = ["runuser", "-u", user, "--", *argv]
        done = subprocess.run(
            argv, env=env, cwd=str(REPO), capture_output=True, text=True, timeout=120, check=False
        )
    assert done.returncode == 0, done.stdout + done.stderr
    reports = sorted((root / ".axis" / "reports").iterdir())
    view = read_report(reports[-1], done.returncode)
    assert view.run["status"] == "completed", view.run
    files = {a["path"]: a for a in view.run["artifacts"]}
    assert (view.report_dir / files["out.txt"]["file"]).read_text() == "hello\n"
    uid = int((view.report_dir / files["uid.txt"]["file"]).read_text())
    assert uid != 0
    if user is not None:
        assert uid == pwd.getpwnam(user).pw_uid
    assert server.connect_attempts == []
    assert json.loads((view.report_dir / "report.json").read_text())["summary"]["completed"] == 1
