"""The ax-task-runner image: built with no registry pull, run as PID 1 with no network."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import grpc
import pytest
import yaml

from axis_eval.execute.guest import guest_pb2 as pb
from task_runner.guest.client import GuestClient, free_port

from .helpers import DockerEnv

# one private dockerd and one image build for the session: keep these on one xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.xdist_group("docker")]

PROBE = r"""
import json, sys, urllib.request, urllib.error
out = {}
for path in sys.argv[1:]:
    try:
        with urllib.request.urlopen("http://127.0.0.1:80" + path, timeout=2) as r:
            out[path] = [r.status, r.headers.get("content-type"), r.read().decode()]
    except urllib.error.HTTPError as e:
        out[path] = [e.code, e.headers.get("content-type"), e.read().decode()]
    except OSError as e:
        out[path] = [0, None, str(e)]
print(json.dumps(out))
"""


def _git(*args: str, cwd: Path) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@e"
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=60)


def _bare_repo(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    (src / "README.md").write_text("cloned inside the container\n")
    _git("init", "-q", "-b", "main", cwd=src)
    _git("add", ".", cwd=src)
    _git("commit", "-q", "-m", "init", cwd=src)
    repos = tmp / "repos"
    repos.mkdir()
    _git("clone", "-q", "--bare", str(src), str(repos / "app.git"), cwd=tmp)
    return repos


def test_image_holds_runner_python_git_and_ca_certificates(docker_env: DockerEnv) -> None:
    script = (
        "test -x /usr/local/bin/ax-task-runner && python3 --version && git --version "
        "&& test -s /etc/ssl/certs/ca-certificates.crt && echo layout-ok"
    )
    out = docker_env.run(
        "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", docker_env.tag, "-c", script
    ).stdout
    assert "Python 3.11" in out and "git version" in out and "layout-ok" in out
    config = json.loads(docker_env.run("image", "inspect", docker_env.tag).stdout)[0]["Config"]
    assert config["Entrypoint"] == ["/usr/local/bin/ax-task-runner"]


def test_runner_is_pid1_serves_clones_and_runs_the_command(
    docker_env: DockerEnv, tmp_path: Path
) -> None:
    repos = _bare_repo(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    task = {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": "image-test", "atespace": "default"},
        "spec": {
            "command": [
                "sh",
                "-c",
                'pwd > cwd.txt; echo "$AX_METADATA_URL" > url.txt; exec sleep 600',
            ],
            "workspaces": [{"name": "code"}],
        },
    }
    ws_doc = {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": "code"},
        "spec": {"git": [{"name": "app", "repo": "file:///repos/app.git", "branch": "main"}]},
    }
    name = f"ax-runner-test-{os.getpid()}"
    started = time.monotonic()
    docker_env.run(
        "run", "-d", "--name", name, "--network", "none",
        "-v", f"{workspace}:/workspace", "-v", f"{repos}:/repos:ro",
        "-e", f"AX_TASK_YAML={yaml.safe_dump(task)}",
        "-e", f"AX_WORKSPACES_YAML={yaml.safe_dump(ws_doc)}",
        docker_env.tag,
    )  # fmt: skip
    try:
        paths = ["/healthz", "/readyz", "/readyz?check=workspace", "/metadata/v1alpha1/ax/task"]
        deadline = time.monotonic() + 60
        while True:
            probe = docker_env.run("exec", name, "python3", "-c", PROBE, *paths, check=False)
            result = json.loads(probe.stdout) if probe.returncode == 0 else {}
            if result.get("/readyz?check=workspace", [0])[0] == 200:
                break
            if time.monotonic() > deadline:
                logs = docker_env.run("logs", name, check=False)
                pytest.fail(f"not ready: {result} {probe.stderr}\n{logs.stdout}{logs.stderr}")
            time.sleep(0.2)
        ready_after = time.monotonic() - started
        assert result["/healthz"][0] == 200
        assert result["/readyz"][0] == 200
        status, content_type, body = result["/metadata/v1alpha1/ax/task"]
        assert status == 200 and content_type.startswith("application/yaml")
        assert yaml.safe_load(body)["metadata"]["name"] == "image-test"
        # The runner is PID 1.
        cmdline = docker_env.run("exec", name, "cat", "/proc/1/cmdline").stdout
        assert "/usr/local/bin/ax-task-runner" in cmdline.split("\0")
        # A command runs through docker exec; the task command ran in the first workspace.
        assert docker_env.run("exec", name, "sh", "-c", "echo exec-ok").stdout == "exec-ok\n"
        assert (workspace / "code" / "app" / "README.md").read_text().startswith("cloned")
        deadline = time.monotonic() + 10
        while not (workspace / "code" / "url.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (workspace / "code" / "cwd.txt").read_text().strip() == "/workspace/code"
        assert (workspace / "code" / "url.txt").read_text().strip() == "http://127.0.0.1:80"
        # docker stop = SIGTERM to PID 1: the command's group goes, the runner exits 0.
        stop_started = time.monotonic()
        docker_env.run("stop", "-t", "30", name, timeout=60)
        stop_took = time.monotonic() - stop_started
        state = json.loads(docker_env.run("inspect", name).stdout)[0]["State"]
        assert state["ExitCode"] == 0, docker_env.run("logs", name, check=False).stderr
        assert stop_took < 15
        print(f"\nimage: ready {ready_after:.2f} s after docker run; stop {stop_took:.2f} s")
    finally:
        docker_env.run("rm", "-f", name, check=False)


def test_guest_grpc_in_the_container(docker_env: DockerEnv, tmp_path: Path) -> None:
    """debug: true in the image; a grpcio client on the host (host network, loopback only)."""
    port = free_port()
    task = {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": "image-debug"},
        "spec": {"workspaces": [{"name": "code"}], "debug": True},
    }
    name = f"ax-runner-grpc-{os.getpid()}"
    docker_env.run(
        "run", "-d", "--name", name, "--network", "host",
        "-v", f"{tmp_path}:/workspace", "-e", f"AX_TASK_YAML={yaml.safe_dump(task)}",
        docker_env.tag, "--host", "127.0.0.1", "--port", str(port),
    )  # fmt: skip
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=30)
            guest = GuestClient(channel)
            out, _err, exit_msg = guest.run(["sh", "-c", "cat /etc/os-release; pwd"], timeout=30)
            assert exit_msg.exit_code == 0
            assert b"bookworm" in out and out.rstrip().endswith(b"/workspace/code")
            guest.write("hello.txt", [b"from the host"])
            assert (tmp_path / "code" / "hello.txt").read_bytes() == b"from the host"
            assert guest.read("hello.txt") == b"from the host"
            proc = guest.start(pb.StartProcessRequest(command=["sleep", "300"]), timeout=10)
            guest.signal(pb.SignalProcessRequest(process_id=proc.process_id, signal=pb.SIGNAL_TERM))
            assert guest.collect(proc.process_id)[2].exit_code == 143
    finally:
        docker_env.run("rm", "-f", name, check=False)


def test_extending_the_image(docker_env: DockerEnv, tmp_path: Path) -> None:
    """`FROM` our image plus a tool keeps the runner as the entrypoint (docs/runner-image.md)."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    tool = ctx / "hello-tool"
    tool.write_text("#!/bin/sh\necho hello from an added tool\n")
    tool.chmod(0o755)
    (ctx / "Dockerfile").write_text(
        f"FROM {docker_env.tag}\nCOPY hello-tool /usr/local/bin/hello-tool\n"
    )
    derived = "axis-eval/ax-task-runner-derived:test"
    docker_env.run("build", "--network", "none", "-t", derived, str(ctx), timeout=300)
    try:
        out = docker_env.run(
            "run", "--rm", "--network", "none", "--entrypoint", "hello-tool", derived
        ).stdout
        assert out == "hello from an added tool\n"
        config = json.loads(docker_env.run("image", "inspect", derived).stdout)[0]["Config"]
        assert config["Entrypoint"] == ["/usr/local/bin/ax-task-runner"]
    finally:
        docker_env.run("rmi", "-f", derived, check=False)
