#!/usr/bin/env python3
"""ax-task-runner: start-up, workspace preparation against `git clone`, idle memory.

Run by hand (never from tests):  .venv/bin/python bench/runner.py [--reps 5] [--json]

Measures the runner as a subprocess (`python -m ax_task_runner --host 127.0.0.1 ...`),
everything on loopback and local disk:

1. start → /healthz: from spawning the process to the first `200` from /healthz
   (target < 0.5 s). The runner serves before it prepares anything.
2. workspace ready: a Workspace whose one `spec.git` entry is a local 1,000-file
   repository served by `file://` URL (real git transport, like a remote), against
   `git clone --no-local` of the same repository. Reported two ways:
   - prepare: from the first /healthz `200` to the first `200` of
     `/readyz?check=workspace` (the runner's own work: init, fetch, checkout, markers);
   - end to end: from spawning the process to that `200`.
   Target: prepare ≤ 1.2 × clone (the end-to-end ratio is shown too).
3. idle RSS: VmRSS of the runner process once ready and idle for a second, with no task
   command (target < 60 MB); also with `spec.debug: true` after one gRPC call has loaded
   hyper-h2 and protobuf, for information.

Each measurement is repeated --reps times; medians are reported.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TARGET_HEALTHZ_S = 0.5
TARGET_READY_RATIO = 1.2
TARGET_RSS_MB = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def status(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()


def git(*args: str, cwd: Path) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@e")
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@e")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def make_repo(root: Path, files: int = 1000) -> Path:
    repo = root / "repo"
    repo.mkdir()
    for i in range(files):
        path = repo / f"pkg{i % 20:02d}" / f"mod{i // 20:02d}" / f"file{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(40))
        path.write_text(body)
    git("init", "-q", "-b", "main", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "1,000 files", cwd=repo)
    return repo


def clone_time(repo: Path, dest: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        ["git", "clone", "-q", "--no-local", str(repo), str(dest)], check=True, capture_output=True
    )
    return time.perf_counter() - started


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Runner:
    def __init__(self, work: Path, task: dict[str, Any], workspaces: list[dict[str, Any]]):
        self.work = work
        work.mkdir(parents=True)
        (work / "task.yaml").write_text(yaml.safe_dump(task))
        argv = ["--task-file", str(work / "task.yaml")]
        if workspaces:
            (work / "ws.yaml").write_text(yaml.safe_dump_all(workspaces))
            argv += ["--workspace-file", str(work / "ws.yaml")]
        (work / "root").mkdir()
        (work / "state").mkdir()
        self.port = free_port()
        self.argv = [sys.executable, "-m", "ax_task_runner", "--host", "127.0.0.1"]
        self.argv += ["--port", str(self.port), *argv, "--workspace-root", str(work / "root")]
        self.argv += ["--state-dir", str(work / "state")]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("AX_", "GEMINI_"))}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        self.started = time.perf_counter()
        self.log = open(self.work / "runner.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            self.argv, stdout=self.log, stderr=subprocess.STDOUT, env=self.env
        )
        return self.started

    def wait_for(self, path: str, timeout: float = 60) -> float:
        """Seconds from start to the first 200 on path."""
        assert self.proc is not None
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if status(self.port, path) == 200:
                return time.perf_counter() - self.started
            if self.proc.poll() is not None:
                raise RuntimeError(f"runner exited {self.proc.returncode}: see {self.log.name}")
            time.sleep(0.002)
        raise RuntimeError(f"{path} not 200 within {timeout} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def task(name: str, *, workspaces: list[str], debug: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "ax.io/v1alpha1",
        "kind": "Task",
        "metadata": {"name": name},
        "spec": {"workspaces": [{"name": w} for w in workspaces], "debug": debug},
    }


def grpc_touch(port: int) -> None:
    """One real gRPC call (loads h2 and protobuf in the runner)."""
    import grpc

    from axis_eval.execute.guest import guest_pb2 as pb

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary(
            "/ateenv.v1alpha.ProcessService/StartProcess",
            request_serializer=pb.StartProcessRequest.SerializeToString,
            response_deserializer=pb.Process.FromString,
        )
        call(pb.StartProcessRequest(command=["true"]), timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args()
    machine = f"{platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}"
    results: dict[str, Any] = {"machine": machine}
    with tempfile.TemporaryDirectory(prefix="ax-runner-bench-") as tmp:
        root = Path(tmp)
        repo = make_repo(root, args.files)
        clone_time(repo, root / "warm")  # warm the page cache

        healthz, idle_rss = [], []
        for i in range(args.reps):
            r = Runner(root / f"h{i}", task("bench", workspaces=["code"]), [])
            r.start()
            try:
                healthz.append(r.wait_for("/healthz"))
                r.wait_for("/readyz?check=workspace")
                time.sleep(1.0)
                assert r.proc is not None
                idle_rss.append(rss_mb(r.proc.pid))
            finally:
                r.stop()

        clones, prepares, ends = [], [], []
        workspace = {
            "apiVersion": "ax.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "code"},
            "spec": {"git": [{"name": "app", "repo": f"file://{repo}", "branch": "main"}]},
        }
        for i in range(args.reps):
            clones.append(clone_time(repo, root / f"clone{i}"))
            r = Runner(root / f"r{i}", task("bench", workspaces=["code"]), [workspace])
            r.start()
            try:
                served = r.wait_for("/healthz")
                ready = r.wait_for("/readyz?check=workspace")
            finally:
                r.stop()
            checkout = root / f"r{i}" / "root" / "code" / "app"
            files = sum(1 for p in checkout.rglob("*.py"))
            if files != args.files:
                raise RuntimeError(f"runner checkout has {files} files, expected {args.files}")
            prepares.append(ready - served)
            ends.append(ready)

        debug_rss = []
        for i in range(max(1, args.reps // 2)):
            r = Runner(root / f"d{i}", task("bench", workspaces=["code"], debug=True), [])
            r.start()
            try:
                r.wait_for("/readyz?check=workspace")
                grpc_touch(r.port)
                time.sleep(1.0)
                assert r.proc is not None
                debug_rss.append(rss_mb(r.proc.pid))
            finally:
                r.stop()

    med = statistics.median
    clone = med(clones)
    results.update(
        {
            "healthz_s": {"median": med(healthz), "max": max(healthz)},
            "clone_s": {"median": clone},
            "prepare_s": {"median": med(prepares), "ratio": med(prepares) / clone},
            "ready_end_to_end_s": {"median": med(ends), "ratio": med(ends) / clone},
            "idle_rss_mb": {"median": med(idle_rss), "max": max(idle_rss)},
            "idle_rss_debug_after_grpc_mb": {"median": med(debug_rss)},
            "files": args.files,
            "reps": args.reps,
        }
    )
    checks = {
        "healthz < 0.5 s": max(healthz) < TARGET_HEALTHZ_S,
        "prepare <= 1.2 x clone": med(prepares) <= TARGET_READY_RATIO * clone,
        "idle RSS < 60 MB": max(idle_rss) < TARGET_RSS_MB,
    }
    results["targets"] = checks
    print(f"ax-task-runner benchmark ({results['machine']}; {args.reps} reps, medians)")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(
        f"| start → /healthz 200 | {med(healthz) * 1000:.0f} ms (max {max(healthz) * 1000:.0f})"
        f" | < 500 ms: {'PASS' if checks['healthz < 0.5 s'] else 'FAIL'} |"
    )
    print(f"| git clone --no-local, {args.files} files | {clone * 1000:.0f} ms | – |")
    print(
        f"| workspace prepare (healthz → ready) | {med(prepares) * 1000:.0f} ms"
        f" ({med(prepares) / clone:.2f} × clone) | ≤ 1.2 × clone: "
        f"{'PASS' if checks['prepare <= 1.2 x clone'] else 'FAIL'} |"
    )
    print(
        f"| start → workspace ready | {med(ends) * 1000:.0f} ms ({med(ends) / clone:.2f} × clone)"
        " | – |"
    )
    print(
        f"| idle RSS, no command | {med(idle_rss):.1f} MB (max {max(idle_rss):.1f})"
        f" | < 60 MB: {'PASS' if checks['idle RSS < 60 MB'] else 'FAIL'} |"
    )
    print(f"| idle RSS, debug after a gRPC call | {med(debug_rss):.1f} MB | – |")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
