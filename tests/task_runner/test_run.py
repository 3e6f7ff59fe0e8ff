"""A full run with every schema field: two file:// repositories, readiness, the command,
every endpoint, MCP files, skills and markers; and the document's example."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .helpers import HERE, SPECS, GitWrapper, RunnerProc, git, make_repo


def fill(name: str, values: dict[str, str], dest: Path) -> Path:
    text = (SPECS / name).read_text()
    for key, value in values.items():
        text = text.replace("${" + key + "}", value)
    dest.write_text(text)
    return dest


def _repos(tmp_path: Path) -> tuple[str, str]:
    alpha = make_repo(
        tmp_path / "src" / "alpha",
        [
            {"a.txt": "one\n"},
            {"a.txt": "two\n"},
            {"a.txt": "three\n", "docs/readme.md": "# alpha\n"},
        ],
    )
    beta = make_repo(
        tmp_path / "src" / "beta.git",
        [{"b.txt": "b1\n"}, {"b.txt": "b2\n"}],
        branches={"feature": {"feature.txt": "on feature\n"}},
    )
    return alpha, beta


def _probe(path: Path, timeout: float = 15.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, "the command never wrote its report"
        time.sleep(0.02)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _watch_readiness(runner: RunnerProc, files: list[Path]) -> list[tuple[int, bool, bool]]:
    """Poll /readyz until 200; each sample: (status, busy, every clone finished)."""
    samples: list[tuple[int, bool, bool]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = runner.get("/readyz").status
        busy = runner.status()["busy"]
        samples.append((status, busy, all(f.exists() for f in files)))
        if status == 200:
            return samples
        time.sleep(0.05)
    raise AssertionError(runner.logs())


def test_full_run(start_runner: Any, git_wrapper: GitWrapper, tmp_path: Path) -> None:
    alpha, beta = _repos(tmp_path)
    root, home, out = tmp_path / "volume", tmp_path / "home", tmp_path / "probe.json"
    values = {
        "PYTHON": sys.executable,
        "PROBE": str(HERE / "probe.py"),
        "OUT": str(out),
        "HOME": str(home),
        "ROOT": str(root),
        "REPO_A": alpha,
        "REPO_B": beta,
    }
    task = fill("task-full.yaml", values, tmp_path / "task.yaml")
    workspaces = fill("workspaces-full.yaml", values, tmp_path / "workspaces.yaml").read_text()
    # Two files, as in the document's local flow: tools+unbound first, code second.
    code_doc, rest = workspaces.split("\n---\n", 1)
    files = [tmp_path / "tools.yaml", tmp_path / "code.yaml"]
    files[0].write_text(rest)
    files[1].write_text(code_doc)
    beta_dest = root / "code" / "libs" / "beta"
    runner = start_runner(
        task=task,
        workspaces=files,
        env=git_wrapper.env(verb="fetch", directory=str(beta_dest), seconds=1.0),
    )
    runner.wait_healthy()
    # Readiness flips only once the slow clone is complete; busy until then.
    clones = [beta_dest / "feature.txt", root / "team-tools" / "a.txt"]
    samples = _watch_readiness(runner, clones)
    assert samples[0] == (503, True, False), samples
    assert samples[-1][0] == 200 and samples[-1][2] is True, samples

    # Repositories: branch, depth, destinations, detached HEAD.
    code = root / "code"
    assert (code / "alpha" / "a.txt").read_text() == "three\n"
    assert git("rev-list", "--count", "HEAD", cwd=code / "alpha") == "1"
    assert git("rev-parse", "--is-shallow-repository", cwd=code / "alpha") == "true"
    assert git("remote", "get-url", "origin", cwd=code / "alpha") == alpha
    assert (beta_dest / "feature.txt").read_text() == "on feature\n"
    assert git("rev-list", "--count", "HEAD", cwd=beta_dest) == "2"
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=beta_dest) == "HEAD"  # detached
    tools = root / "team-tools"
    assert (tools / "a.txt").read_text() == "three\n" and (tools / ".git").is_dir()
    assert (root / "scratch").is_dir() and list((root / "scratch").iterdir()) == []
    # Skills (absolute as given; relative under the workspace).
    assert (root / "skills" / "code").is_dir() and (tools / ".agents" / "skills").is_dir()
    # MCP configuration under the command's HOME, in three formats; nothing in the workspaces.
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert claude["git-tools"] == {
        "type": "http",
        "url": "http://git-mcp.default.svc.cluster.local:8080",
    }
    assert claude["local-echo"] == {
        "type": "stdio",
        "command": "python3",
        "args": ["-m", "echo_server", "--verbose"],
    }
    assert "registry-listed" in claude
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())["mcpServers"]
    assert gemini["git-tools"] == {"httpUrl": "http://git-mcp.default.svc.cluster.local:8080"}
    codex = (home / ".codex" / "config.toml").read_text()
    assert '[mcp_servers.git-tools]\nurl = "http://git-mcp.default.svc.cluster.local:8080"' in codex
    assert '[mcp_servers.local-echo]\ncommand = "python3"' in codex
    assert not list(root.rglob(".claude.json")) and not list(root.rglob("settings.json"))
    # Markers: upstream's names in the state dir, and copies on the volume.
    prefix = "initialized-" + str(root).strip("/").replace("/", "-")
    for key, name in (("code", "code"), ("team-tools", "tools"), ("scratch", "unknown")):
        text = (runner.state / f"{prefix}-{key}").read_text()
        assert text.startswith(f"workspace: {name}\ninitialized_at: "), text
    assert len(list((root / ".ax-task-runner").glob("initialized-*"))) == 3
    assert (runner.state / "git-success.log").exists()
    assert not (runner.state / "git-error.log").exists()

    # The command: first workspace as cwd, own process group, env, metadata reachable.
    report = _probe(out)
    assert report["cwd"] == str(code)
    assert report["pgid"] == report["pid"] and report["sid"] != report["pid"]
    assert report["env"]["AX_METADATA_URL"] == f"http://127.0.0.1:{runner.port}"
    assert report["env"]["ENVIRONMENT"] == "production" and report["env"]["HOME"] == str(home)
    assert report["task"]["status"] == 200 and report["task"]["type"] == "application/yaml"
    assert sorted(report["cwd_files"]) == ["alpha", "libs"]
    # It exits 3; the runner logs it and stays up.
    runner.wait_log(
        r'msg="task command exited with error" pid=\d+ exitCode=3 error="exit status 3"'
    )
    assert runner.status() == {
        "idleSeconds": runner.status()["idleSeconds"],
        "inFlight": 0,
        "busy": False,
        "exited": True,
        "exitCode": 3,
    }
    time.sleep(0.3)
    assert runner.proc.poll() is None and runner.get("/healthz").status == 200

    _check_endpoints(runner, root)
    assert runner.terminate() == 0
    state = json.loads((root / ".ax-task-runner" / "runner-state.json").read_text())
    assert state["command"]["exitCode"] == 3 and state["signal"] == "SIGTERM"
    assert "unknown field" not in runner.logs()


def _check_endpoints(runner: RunnerProc, root: Path) -> None:
    health = runner.get("/healthz")
    assert (health.status, health.text, health.headers["content-type"]) == (
        200,
        "ok\n",
        "text/plain; charset=utf-8",
    )
    for method in ("GET", "HEAD", "POST"):
        ready = runner.get("/readyz?check=workspace", method=method)
        assert ready.status == 200 and ready.body == (b"" if method == "HEAD" else b"ok\n")
    task = runner.get("/metadata/v1alpha1/ax/task")
    assert task.status == 200 and task.headers["content-type"] == "application/yaml"
    [doc] = task.yaml_docs()
    assert doc["metadata"] == {
        "name": "full-task",
        "atespace": "team-a",
        "creationTimestamp": "2026-05-01T12:00:00Z",
    }
    assert "status" not in doc and "suspend" not in doc["spec"]
    assert doc["spec"]["gateway"] == {"name": "egress"}
    assert doc["spec"]["resources"]["limits"] == {"cpu": "2", "memory": "4Gi"}
    workspaces = runner.get("/metadata/v1alpha1/ax/workspaces")
    assert workspaces.status == 200 and workspaces.headers["content-type"] == "application/yaml"
    docs = workspaces.yaml_docs()
    assert [d["metadata"]["name"] for d in docs] == ["code", "tools"]  # matched, binding order
    assert docs[0]["spec"]["git"][1]["branch"] == "feature"
    missing = runner.get("/nope")
    assert (missing.status, missing.text) == (404, "404 page not found\n")
    assert missing.headers["x-content-type-options"] == "nosniff"
    status = runner.get("/metadata/v1alpha1/ax/status")
    assert status.headers["content-type"] == "application/json"
    assert set(status.json()) == {"idleSeconds", "inFlight", "busy", "exited", "exitCode"}
    # Keep-alive: two requests on one connection.
    with socket.create_connection(("127.0.0.1", runner.port), timeout=5) as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        data = b""
        while data.count(b"ok\n") < 2:
            chunk = sock.recv(4096)
            assert chunk, data
            data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 2


def test_the_documents_example_stays_up_without_its_agent(
    start_runner: Any, tmp_path: Path
) -> None:
    """runner.md's custom-runner Task via AX_TASK_YAML: `my-agent` does not exist here."""
    runner = start_runner(task=SPECS / "doc-custom-runner.yaml", via_env=True)
    runner.wait_ready()
    runner.wait_log(r"task command failed to start; serving until stopped.*my-agent")
    assert runner.status()["exited"] is True and runner.status()["exitCode"] == 127
    doc = runner.get("/metadata/v1alpha1/ax/task").yaml_docs()[0]
    assert doc["spec"]["command"] == ["my-agent", "--goal", "fix the flaky test"]
    assert doc["spec"]["debug"] is True
    missing = runner.get("/metadata/v1alpha1/ax/workspaces")
    assert (missing.status, missing.text) == (404, "workspace metadata not available\n")
    assert (runner.root).is_dir()  # no bindings: the implicit workspace is the root
    assert runner.terminate() == 0


def test_no_task_serves_until_stopped(start_runner: Any) -> None:
    runner = start_runner(args=["--readiness", "serving"])
    runner.wait_ready()
    runner.wait_log("no task command specified; serving metadata until stopped")
    missing = runner.get("/metadata/v1alpha1/ax/task")
    assert (missing.status, missing.text) == (404, "task metadata not available\n")
    assert runner.terminate() == 0


def test_serving_readiness_option(
    start_runner: Any, git_wrapper: GitWrapper, tmp_path: Path
) -> None:
    """Later upstream: plain /readyz is 200 while cloning; ?check=workspace waits."""
    url = make_repo(tmp_path / "src" / "r", [{"r.txt": "r\n"}])
    root = tmp_path / "volume"
    runner = start_runner(  # specs through AX_TASK_YAML / AX_WORKSPACES_YAML this time
        task={"kind": "Task", "metadata": {"name": "t"}, "spec": {"workspaces": [{"name": "w"}]}},
        workspaces=[
            {"kind": "Workspace", "metadata": {"name": "w"}, "spec": {"git": [{"repo": url}]}}
        ],
        env={
            **git_wrapper.env(verb="fetch", directory=str(root / "w" / "r"), seconds=1.5),
            "AX_RUNNER_READINESS": "serving",
        },
        via_env=True,
    )
    runner.wait_healthy()
    assert runner.get("/readyz").status == 200
    waiting = runner.get("/readyz?check=workspace")
    assert (waiting.status, waiting.text) == (503, "workspace initializing\n")
    runner.wait_ready(path="/readyz?check=workspace")
    assert (root / "w" / "r" / "r.txt").exists()
    assert runner.terminate() == 0


def test_malformed_spec_exits_1_with_a_clear_line(start_runner: Any) -> None:
    runner = start_runner(task="kind: Task\nmetadata: {name: x}\nspec: {command: 5\n")
    assert runner.proc.wait(10) == 1
    line = runner.logs().strip().splitlines()[-1]
    assert 'level=ERROR msg="task runner failed"' in line and "invalid YAML at line" in line
    bad = start_runner(
        task=yaml.safe_dump({"kind": "Task", "metadata": {"name": "x"}, "spec": {"env": "oops"}})
    )
    assert bad.proc.wait(10) == 1
    assert "spec.env" in bad.logs()


def test_a_workspace_that_cannot_be_created_is_never_ready(
    start_runner: Any, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    runner = start_runner(
        task={
            "kind": "Task",
            "metadata": {"name": "t"},
            "spec": {
                "command": ["true"],
                "workspaces": [{"name": "w", "path": str(blocker / "w")}],
            },
        },
    )
    runner.wait_log("workspace maiden run setup failed")
    runner.wait_log("task command failed to start")  # started anyway, as upstream; no cwd
    assert runner.get("/readyz").status == 503
    assert runner.get("/readyz?check=workspace").status == 503
    assert runner.terminate() == 0
