"""Restarts on the same volume: nothing is cloned again, edits survive, a killed clone
is finished by the next boot without touching the repositories that were complete."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from .helpers import GitWrapper, git, make_repo, py_command, task_doc, workspace_doc

pytestmark = pytest.mark.slow  # starts the task runner and its goal agents as processes

EDIT = (
    "import pathlib; p = pathlib.Path('alpha/a.txt');"
    " p.write_text(p.read_text() + 'agent edit\\n');"
    " pathlib.Path('alpha/notes.txt').write_text('untracked\\n')"
)


def _setup(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    alpha = make_repo(tmp_path / "src" / "alpha", [{"a.txt": "one\n"}, {"a.txt": "two\n"}])
    beta = make_repo(
        tmp_path / "src" / "beta", [{"b.txt": "b\n"}], branches={"feature": {"f.txt": "f\n"}}
    )
    workspace = workspace_doc(
        "code",
        git=[{"name": "alpha", "repo": alpha}, {"name": "beta", "repo": beta, "branch": "feature"}],
    )
    return workspace, tmp_path / "volume" / "code"


def _git_calls(wrapper: GitWrapper, verb: str) -> list[str]:
    return [cwd for cwd, args in wrapper.calls() if f" {verb}" in f" {args}"]


def test_restart_on_the_same_volume(
    start_runner: Any, git_wrapper: GitWrapper, tmp_path: Path
) -> None:
    workspace, code = _setup(tmp_path)
    first = start_runner(
        task=task_doc(command=py_command(EDIT), workspaces=[{"name": "code"}]),
        workspaces=[workspace],
        env=git_wrapper.env(),
    )
    first.wait_log("task command completed successfully")
    assert (code / "alpha" / "a.txt").read_text() == "two\nagent edit\n"
    assert _git_calls(git_wrapper, "fetch") and _git_calls(git_wrapper, "checkout")
    assert first.terminate() == 0

    quiet = task_doc(command=["true"], workspaces=[{"name": "code"}])
    boots = [
        ("same state dir", tmp_path / "ax"),  # upstream's /ax marker
        ("state dir lost", tmp_path / "ax-2"),  # only the durable marker is left
    ]
    for why, state in boots:
        git_wrapper.reset()
        runner = start_runner(
            task=quiet, workspaces=[workspace], env=git_wrapper.env(), state=state
        )
        runner.wait_ready()
        runner.wait_log("task command completed successfully")
        assert git_wrapper.calls() == [], why
        assert "workspace already initialized; skipping maiden run setup" in runner.logs(), why
        assert runner.terminate() == 0
    assert (tmp_path / "ax-2" / f"initialized-{str(code).strip('/').replace('/', '-')}").exists()

    # Every marker gone: each repository is recognised as a finished checkout on its own.
    for marker in (tmp_path / "volume" / ".ax-task-runner").glob("initialized-*"):
        marker.unlink()
    git_wrapper.reset()
    runner = start_runner(
        task=quiet, workspaces=[workspace], env=git_wrapper.env(), state=tmp_path / "ax-3"
    )
    runner.wait_ready()
    assert runner.logs().count("repository already checked out; leaving it alone") == 2
    assert _git_calls(git_wrapper, "fetch") == [] and _git_calls(git_wrapper, "checkout") == []
    assert runner.terminate() == 0

    assert (code / "alpha" / "a.txt").read_text() == "two\nagent edit\n"
    assert (code / "alpha" / "notes.txt").read_text() == "untracked\n"
    assert git("status", "--porcelain", cwd=code / "alpha") == "M a.txt\n?? notes.txt".strip()


def test_kill_during_a_clone(start_runner: Any, git_wrapper: GitWrapper, tmp_path: Path) -> None:
    workspace, code = _setup(tmp_path)
    task = task_doc(command=["true"], workspaces=[{"name": "code"}])
    # git dies mid-checkout of beta, holding index.lock, when the container is killed.
    slow = git_wrapper.env(verb="checkout", directory=str(code / "beta"), seconds=60, lock=True)
    first = start_runner(task=task, workspaces=[workspace], env=slow)
    first.wait_for(lambda: bool(_git_calls(git_wrapper, "checkout")[1:]), "beta's checkout")
    time.sleep(0.2)
    assert first.get("/readyz").status == 503
    first.kill_session()
    assert (code / "alpha" / ".git" / "ax-task-runner-checkout").is_file()
    assert (code / "beta" / ".git" / "index.lock").exists()
    assert not (code / "beta" / "f.txt").exists()
    assert not list((tmp_path / "ax").glob("initialized-*"))
    # What an agent might have done to the complete repository meanwhile.
    (code / "alpha" / "a.txt").write_text("edited before the reboot\n")
    head = (code / "alpha" / ".git" / "HEAD").read_text()

    git_wrapper.reset()
    second = start_runner(task=task, workspaces=[workspace], env=git_wrapper.env())
    second.wait_ready()
    assert (code / "beta" / "f.txt").read_text() == "f\n"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=code / "beta") == "HEAD"
    assert (code / "alpha" / "a.txt").read_text() == "edited before the reboot\n"
    assert (code / "alpha" / ".git" / "HEAD").read_text() == head
    touched = {cwd for cwd, _ in git_wrapper.calls()}
    assert touched == {str(code / "beta")}, touched
    assert "repository already checked out; leaving it alone" in second.logs()
    assert list((tmp_path / "ax").glob("initialized-*"))
    assert second.terminate() == 0


def test_sigterm_during_a_clone(start_runner: Any, git_wrapper: GitWrapper, tmp_path: Path) -> None:
    """Stop (or suspend) mid-fetch: git's group is killed at once, the next boot finishes."""
    workspace, code = _setup(tmp_path)
    task = task_doc(command=["true"], workspaces=[{"name": "code"}])
    slow = git_wrapper.env(verb="fetch", directory=str(code / "alpha"), seconds=60)
    first = start_runner(task=task, workspaces=[workspace], env=slow)
    first.wait_for(lambda: bool(_git_calls(git_wrapper, "fetch")), "alpha's fetch")
    time.sleep(0.2)
    started = time.monotonic()
    assert first.terminate() == 0
    assert time.monotonic() - started < 5
    sleepers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs_in(p, code)]
    assert sleepers == []
    git_wrapper.reset()
    second = start_runner(task=task, workspaces=[workspace], env=git_wrapper.env())
    second.wait_ready()
    assert (code / "alpha" / "a.txt").read_text() == "two\n"
    assert (code / "beta" / "f.txt").read_text() == "f\n"
    assert second.terminate() == 0


def _runs_in(proc: Path, folder: Path) -> bool:
    try:
        return str(folder) in str((proc / "cwd").readlink())
    except OSError:
        return False
