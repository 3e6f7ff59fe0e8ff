"""The git layer (axis_eval._util.git) against real git: errors in words, never a prompt
or a hang, pinned refs, and the cache's offline use. Servers bind 127.0.0.1 only."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from axis_eval._util import git
from helpers.git_server import GitServer, Repo, need_git, refusing_url, serving


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_git()


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitServer]:
    with serving(tmp_path / "served", monkeypatch) as server:
        yield server


class _Answer(BaseHTTPRequestHandler):
    status = 401

    def do_GET(self) -> None:
        self.send_response(self.status)
        if self.status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_status() -> Iterator[dict[int, str]]:
    """Base URLs of HTTP servers answering every request 401 and 404."""
    servers = []
    urls: dict[int, str] = {}
    for status in (401, 404):
        handler = type(f"Answer{status}", (_Answer,), {"status": status})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        urls[status] = f"http://127.0.0.1:{server.server_address[1]}"
    yield urls
    for server in servers:
        server.shutdown()
        server.server_close()


def _fails(url: str, dest: Path, **kwargs: object) -> git.GitError:
    with pytest.raises(git.GitError) as caught:
        git.checkout(url, dest, **kwargs)  # type: ignore[arg-type]
    assert url in caught.value.message
    return caught.value


def test_authentication_required_never_prompts(http_status: dict[int, str], tmp_path: Path) -> None:
    url = f"{http_status[401]}/acme/private"
    started = time.monotonic()
    error = _fails(url, tmp_path / "clone")
    assert time.monotonic() - started < 20
    assert error.kind == "auth"
    assert "authentication required" in error.message
    assert error.hint is not None and "never prompts" in error.hint
    assert not (tmp_path / "clone").exists()


def test_not_a_repository(http_status: dict[int, str], served: GitServer, tmp_path: Path) -> None:
    assert _fails(f"{http_status[404]}/acme/missing", tmp_path / "a").kind == "not-a-repo"
    error = _fails(f"{served.base_url}acme/missing", tmp_path / "b")
    assert error.kind == "not-a-repo"
    assert "not a git repository" in error.message


def test_unreachable(tmp_path: Path) -> None:
    error = _fails(refusing_url(), tmp_path / "clone")
    assert error.kind == "unreachable"
    assert "the host cannot be reached" in error.message


def test_a_host_that_never_answers_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"git://127.0.0.1:{listener.getsockname()[1]}/acme/slow"
        started = time.monotonic()
        error = _fails(url, tmp_path / "clone", clone_timeout_s=1.5)
    assert time.monotonic() - started < 10
    assert error.kind == "timeout"
    assert "no answer within 1.5s" in error.message


def test_refs_updates_and_the_cache(served: GitServer, tmp_path: Path) -> None:
    repo: Repo = served.repo("acme", "r")
    first = repo.commit({"a.txt": "1"})
    repo.tag("v1")
    second = repo.commit({"a.txt": "2"})
    dest = tmp_path / "clone"
    assert git.checkout(repo.url, dest).commit == second
    third = repo.commit({"a.txt": "3"})
    assert git.checkout(repo.url, dest, update=False).commit == second
    assert git.checkout(repo.url, dest).commit == third  # pulled fast-forward
    assert (dest / "a.txt").read_text() == "3"
    assert git.checkout(repo.url, dest, offline=True).commit == third
    pinned = tmp_path / "pinned"
    assert git.checkout(repo.url, pinned, ref="v1").commit == first
    assert git.checkout(repo.url, pinned, ref=second).commit == second
    assert git.checkout(repo.url, pinned, ref=second, offline=True).commit == second
    assert _fails(repo.url, pinned, ref="v1", offline=True).kind == "offline"
    short = _fails(repo.url, tmp_path / "short", ref=first[:10])
    assert short.kind == "unknown-ref"
    assert short.hint is not None and "40 hex digits" in short.hint
    assert _fails(repo.url, tmp_path / "none", offline=True).kind == "offline"


def test_a_history_that_cannot_fast_forward_is_cloned_afresh(
    served: GitServer, tmp_path: Path
) -> None:
    from helpers.git_server import git as run_git

    repo = served.repo("acme", "r")
    repo.commit({"a.txt": "1"})
    dest = tmp_path / "clone"
    git.checkout(repo.url, dest)
    run_git("commit", "--quiet", "--amend", "-m", "rewritten", cwd=repo.work)
    run_git("push", "--quiet", "--force", "origin", "HEAD:main", cwd=repo.work)
    rewritten = run_git("rev-parse", "HEAD", cwd=repo.work)
    assert git.checkout(repo.url, dest).commit == rewritten


def test_git_never_gets_a_way_to_prompt() -> None:
    env = git.git_env({"DISPLAY": ":0", "PATH": "/usr/bin"})
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_ASKPASS"] == "" and env["SSH_ASKPASS"] == ""
    assert "DISPLAY" not in env
    assert "BatchMode=yes" in env["GIT_SSH_COMMAND"]


# Hostile repositories: what a clone holds must never reach outside it.


def test_symlinks_leading_out_of_a_checkout_are_deleted_not_followed(
    served: GitServer, tmp_path: Path
) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY")
    repo = served.repo("acme", "evil")
    repo.link("key", str(secret))
    repo.link("deep/er/ssh", str(secret.parent))
    repo.link("up", "../../../../../../../../etc/passwd")
    repo.link("git-config", ".git/config")
    repo.link("loop", "loop")
    repo.link("inner", "docs/a.md")  # stays inside: kept
    repo.commit({"docs/a.md": "A"})
    dest = tmp_path / "clone"
    done = git.checkout(repo.url, dest)
    assert done.dropped == ("deep/er/ssh", "git-config", "key", "loop", "up")
    assert not any((dest / name).is_symlink() for name in done.dropped)
    assert (dest / "inner").read_text() == "A"
    # A cache holding such links (from an older AXIS) is cleaned when used, offline too.
    (dest / "key").symlink_to(secret)
    assert git.checkout(repo.url, dest, offline=True).dropped == ("key",)
    assert not (dest / "key").is_symlink()


def test_only_https_http_git_and_ssh_unless_opted_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AXIS_GIT_ALLOW_PROTOCOL", raising=False)
    repo = Repo.local(tmp_path / "local", "acme", "r")
    repo.commit({"a.txt": "1"})
    error = _fails(repo.url, tmp_path / "clone")
    assert error.kind == "protocol"
    assert "protocol is not allowed" in error.message
    # ext:: (a command) behind git's insteadOf, as a hostile ~/.gitconfig could have it.
    marker = tmp_path / "ran"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.ext::sh -c touch% {marker}% >&2.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://evil.example/")
    assert _fails("https://evil.example/acme/r", tmp_path / "ext").kind == "protocol"
    assert not marker.exists()
    monkeypatch.delenv("GIT_CONFIG_COUNT")
    monkeypatch.setenv("AXIS_GIT_ALLOW_PROTOCOL", "file")
    assert (git.checkout(repo.url, tmp_path / "opted").path / "a.txt").read_text() == "1"


def test_no_hook_or_fsmonitor_runs(
    served: GitServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = served.repo("acme", "r")
    repo.commit({"a.txt": "1"})
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "ran"
    for name in ("post-checkout", "post-merge", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        (hooks / name).chmod(0o755)
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\necho fsmonitor >> {marker}\n")
    monitor.chmod(0o755)
    # git's own configuration (here the global file), which AXIS does not control.
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text(f"[core]\n\thooksPath = {hooks}\n\tfsmonitor = {monitor}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    dest = tmp_path / "clone"
    git.checkout(repo.url, dest)
    repo.commit({"a.txt": "2"})
    git.checkout(repo.url, dest)  # a pull
    git.checkout(repo.url, tmp_path / "pinned", ref="main")
    assert (dest / "a.txt").read_text() == "2"
    assert not marker.exists(), marker.read_text()


def test_runs_sharing_a_cache_take_turns(served: GitServer, tmp_path: Path) -> None:
    repo = served.repo("acme", "r")
    head = repo.commit({f"f{i}.txt": str(i) for i in range(200)})
    dest = tmp_path / "cache" / "r"
    results: list[object] = []

    def one() -> None:
        try:
            results.append(git.checkout(repo.url, dest).commit)
        except Exception as exc:  # the test reports it
            results.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == [head] * 4
    assert sorted(p.name for p in dest.parent.iterdir()) == [".r.axis-lock", "r"]


def test_a_very_deep_tree_is_refused_in_words(served: GitServer, tmp_path: Path) -> None:
    from helpers.git_server import git as run_git

    repo = served.repo("acme", "deep")
    deep = "/".join(["d"] * 1200)
    try:
        # Python's own mkdir recurses per level: the shell makes the tree.
        run_git("-c", "alias.mk=!mkdir -p", "mk", deep, cwd=repo.work)
        (repo.work / deep / "f.txt").write_text("bottom")
        os.symlink("/etc/passwd", repo.work / deep / "key")
        repo.commit({})
        # Skills and copy would recurse through it (RecursionError): refused, in words.
        error = _fails(repo.url, tmp_path / "clone")
        assert error.kind == "too-deep"
        assert f"more than {git.MAX_TREE_DEPTH} folders deep" in error.message
        assert not (tmp_path / "clone").exists()  # removed (without recursion)
    finally:  # pytest's own clean-up recurses: leave no deep tree behind
        git.remove_checkout(repo.work)
        git.remove_checkout(tmp_path / "clone")
