#!/usr/bin/env python3
"""A cold ``docker`` sandbox start, from a job asking for its sandbox to a running agent.

Run by hand, as root (never from tests):

    .venv/bin/python bench/docker_start.py [--rounds 3] [--starts 5] [--network host,none]
        [--side LABEL=IMAGE[@SRC]] ... [--ambient]

Without ``--ambient`` it starts the tests' private dockerd (docker/build.py
``PrivateDockerd``, data root ``.cache/ax-task-runner/dockerd-sandbox``: the agent image
the sandbox tests built is reused) and builds ``axis-eval/ax-agents:test`` from the working
tree, as ``tests/execute/sandbox/conftest.py`` does; with ``--ambient`` it uses the daemon
``DOCKER_HOST`` names, whose images must exist.

A start is what the harness does for a job when no spare container is ready (``prestart``
off): ``DockerSandboxes.open`` (``docker run -d``, the wait for the runner, the guest
client's connection, the job's folders made through the ProcessService), then an instant
agent (``/bin/sh -c 'echo ok'``) started through the ProcessService, to its first byte;
then the container is removed (timed apart: not part of the start). The phases are timed
by wrapping the sandbox's own functions.

A side is a harness (the ``src`` folder of a tree, default this one's) with an image: e.g.
``--side before=axis-eval/ax-agents:before@/tmp/oldtree/src --side after=axis-eval/ax-agents:test``
compares an older tree and its image with this one (build that image into the daemon with
the older tree's docker/build_agents.py, tagged as you name it, and run with
``--ambient``). Each side runs in a worker process of its own (``PYTHONPATH`` = its
``src``); each round starts a fresh worker per side, whose first start is the first docker
job of a run (the harness loads the guest client then), and then ``--starts`` more; sides
and networks alternate start by start, so load drifts hit them alike. Markdown to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
AGENT = ["/bin/sh", "-c", "echo ok"]
PHASES = ("docker run", "runner ready", "connect", "job folders", "agent first byte")
DEFAULT_IMAGE = "axis-eval/ax-agents:test"


# -- the worker: one harness, starts on demand ---------------------------------------------


async def _worker(image: str) -> None:
    from axis_eval.config.sandbox import SandboxPolicy
    from axis_eval.execute.guest import GuestClient
    from axis_eval.execute.process import ProcessSpec, new_run_token
    from axis_eval.execute.sandbox import docker as docker_mod
    from axis_eval.execute.sandbox.docker import DockerSandboxes
    from axis_eval.execute.workspace import create_job_dirs

    at: dict[str, float] = {}

    def wrap(owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)

        async def timed(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            at[label] = time.perf_counter()
            return result

        setattr(owner, name, timed)

    wrap(docker_mod, "start_container", "docker run")
    wrap(DockerSandboxes, "_wait_listening", "runner ready")
    connect = GuestClient.connect

    async def timed_connect(*args: Any, **kwargs: Any) -> Any:
        client = await connect(*args, **kwargs)
        at["connect"] = time.perf_counter()
        return client

    GuestClient.connect = timed_connect  # type: ignore[method-assign]

    tmp = tempfile.mkdtemp(prefix="dstart-")
    project = Path(tmp) / "project"
    (project / ".axis").mkdir(parents=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line.strip() or line.strip() == "quit":
            return
        network = line.strip()
        boxes = DockerSandboxes(new_run_token(), prestart=False)
        policy = SandboxPolicy(mode="docker", image=image, network=network)  # type: ignore[arg-type]
        dirs = create_job_dirs(tmp)
        at.clear()
        try:
            t0 = time.perf_counter()
            box = await boxes.open(policy, dirs, f"{boxes.run_token}/1", str(project))
            t_open = time.perf_counter()
            proc = await box.spawn(ProcessSpec(AGENT, "/", {"PATH": "/usr/bin:/bin"}, None))
            first = await proc.stdout.read(1)
            t_first = time.perf_counter()
            assert first == b"o", first
            await proc.wait()
            await proc.stop(0)
            r0 = time.perf_counter()
            await box.close()
            await boxes.aclose()
            removed = time.perf_counter() - r0
        finally:
            await boxes.aclose()
            dirs.remove()
        stamps = [t0, at["docker run"], at["runner ready"], at["connect"], t_open, t_first]
        out = {label: stamps[i + 1] - stamps[i] for i, label in enumerate(PHASES)}
        out["total"] = t_first - t0
        out["remove"] = removed
        print(json.dumps(out), flush=True)


# -- the parent: sides, rounds, the table ---------------------------------------------------


@dataclass(frozen=True)
class Side:
    label: str
    image: str
    src: str


def parse_side(text: str) -> Side:
    label, _, rest = text.partition("=")
    image, _, src = rest.partition("@")
    if not label or not image:
        raise argparse.ArgumentTypeError(f"--side {text!r}: expected LABEL=IMAGE[@SRC]")
    return Side(label, image, os.path.abspath(src) if src else str(REPO / "src"))


class Worker:
    def __init__(self, side: Side) -> None:
        env = dict(os.environ, PYTHONPATH=side.src)
        argv = [sys.executable, __file__, "--worker", side.image]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )

    def start(self, network: str) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(network + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a worker died (exit {self.proc.wait()})")
        result: dict[str, float] = json.loads(line)
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(60)


Key = tuple[str, str]  # (side label, network)


def measure(
    sides: list[Side], networks: list[str], rounds: int, starts: int
) -> tuple[dict[Key, list[dict[str, float]]], dict[Key, list[dict[str, float]]]]:
    firsts: dict[Key, list[dict[str, float]]] = {}
    steady: dict[Key, list[dict[str, float]]] = {}
    for _ in range(rounds):
        workers = {side.label: Worker(side) for side in sides}
        try:
            for i in range(starts + 1):
                for network in networks:
                    for side in sides:
                        result = workers[side.label].start(network)
                        into = firsts if i == 0 and network == networks[0] else steady
                        into.setdefault((side.label, network), []).append(result)
        finally:
            for worker in workers.values():
                worker.close()
    return firsts, steady


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def report(
    sides: list[Side],
    firsts: dict[Key, list[dict[str, float]]],
    steady: dict[Key, list[dict[str, float]]],
    loads: tuple[float, float],
    networks: list[str],
) -> None:
    py = sys.version.split()[0]
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"Load (1 min) before/after: {loads[0]:.1f} / {loads[1]:.1f}\n")
    images = {side.label: side.image for side in sides}
    header = ["side (image)", "network", *PHASES, "total: median [min–max]", "≤ 0.8 s", "n"]
    header += ["first job of a run", "remove"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    order = {side.label: i for i, side in enumerate(sides)}
    keys = sorted(steady, key=lambda k: (networks.index(k[1]), order[k[0]]))
    for label, network in keys:
        rows = steady[(label, network)]
        totals = [r["total"] for r in rows]
        cells = [f"{label} (`{images[label]}`)", network]
        cells += [_ms([r[phase] for r in rows]) for phase in PHASES]
        cells.append(f"**{_ms(totals)}** [{min(totals) * 1000:.0f}–{max(totals) * 1000:.0f}]")
        cells.append(f"{sum(t <= 0.8 for t in totals)}/{len(totals)}")
        cells.append(str(len(totals)))
        first = [r["total"] for r in firsts.get((label, network), [])]
        cells.append(_ms(first) + f" (n={len(first)})" if first else "–")
        cells.append(_ms([r["remove"] for r in rows]))
        print("| " + " | ".join(cells) + " |")
    print("\nn: starts after each worker's first (sides and networks alternating); phases are")
    print("medians, the total is each start's own sum; the first job of a run is the median")
    print("of each worker's first start (a fresh harness process: it loads the guest client).")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        asyncio.run(_worker(sys.argv[2]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="fresh workers per side")
    parser.add_argument("--starts", type=int, default=5, help="starts per worker after its first")
    parser.add_argument("--network", default="host,none", help="comma-separated: host, none")
    parser.add_argument("--side", type=parse_side, action="append", default=[])
    parser.add_argument("--ambient", action="store_true", help="use DOCKER_HOST's daemon")
    args = parser.parse_args()
    sides = args.side or [Side("this tree", DEFAULT_IMAGE, str(REPO / "src"))]
    daemon = None
    if not args.ambient:
        build_agents = _load("ax_agent_image_build", REPO / "docker" / "build_agents.py")
        build = build_agents.build
        daemon = build.PrivateDockerd(data_root=build.CACHE / "dockerd-sandbox")
        daemon.start()
        os.environ["DOCKER_HOST"] = daemon.env["DOCKER_HOST"]
        os.environ.pop("DOCKER_CONTEXT", None)
        agents = Path(os.environ.get("AXIS_AGENTS_DIR", REPO / ".cache" / "agents"))
        build_agents.build_agent_image(
            build.Docker(daemon.env), DEFAULT_IMAGE, agents_dir=agents, only=["claude-code"]
        )
    try:
        networks = [n for n in args.network.split(",") if n]
        before = os.getloadavg()[0]
        firsts, steady = measure(sides, networks, args.rounds, args.starts)
        report(sides, firsts, steady, (before, os.getloadavg()[0]), networks)
    finally:
        if daemon is not None:
            daemon.stop()


if __name__ == "__main__":
    main()
