"""A private dockerd and the ax-task-runner image, once per test session.

The daemon runs with no bridge, no iptables and no ip forwarding (docker/build.py);
containers use ``--network none`` (or ``host``). The debootstrap base is cached under
``.cache/ax-task-runner`` so only the first run pays for it. When Docker cannot be used
the tests skip loudly, or fail under ``CI=true``. At the end the daemon is stopped, its
folder removed, and the host's links and firewall rules must be as they were.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

from system_parts import not_run

REPO = Path(__file__).resolve().parents[2]
TAG = "axis-eval/ax-task-runner:test"


def _load_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ax_runner_image_build", REPO / "docker/build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


build = _load_build()


def unavailable(reason: str) -> NoReturn:
    """Skip loudly, or fail under CI=true."""
    not_run("DOCKER IMAGE TEST", reason)


def host_network_state() -> dict[str, str]:
    """Links and firewall rules of the host (what a careless dockerd would change)."""
    state: dict[str, str] = {}
    for name, argv in {
        "links": ["ip", "-o", "link", "show"],
        "iptables": ["iptables-save"],
        "ip6tables": ["ip6tables-save"],
        "nft": ["nft", "list", "ruleset"],
    }.items():
        if shutil.which(argv[0]) is None:
            continue
        out = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
        lines = [ln for ln in out.stdout.splitlines() if not ln.startswith("#")]
        if name == "links":  # names only: counters and flags move on their own
            lines = sorted(ln.split(":")[1].strip().split("@")[0] for ln in lines if ":" in ln)
        else:  # iptables-save prints packet counters
            lines = [ln.split(" [")[0] if ln.startswith(":") else ln for ln in lines]
        state[name] = "\n".join(lines)
    return state


@dataclass
class DockerEnv:
    docker: Any  # build.Docker
    tag: str
    timings: dict[str, float]

    def run(self, *args: str, timeout: float = 120, check: bool = True) -> Any:
        return self.docker(*args, timeout=timeout, check=check)


@pytest.fixture(scope="session")
def docker_env() -> Iterator[DockerEnv]:
    if os.geteuid() != 0:
        unavailable("needs root to start a private dockerd (run `make test` as root)")
    for tool in ("dockerd", "docker"):
        if shutil.which(tool) is None:
            unavailable(f"{tool} is missing (`make system-deps` installs docker.io)")
    cached = list(build.CACHE.glob(f"base-{build.SUITE}-{build.base_key()}.tar"))
    if not cached and shutil.which("debootstrap") is None:
        unavailable("debootstrap is missing and no base rootfs is cached (`make system-deps`)")
    before = host_network_state()
    daemon = build.PrivateDockerd()
    try:
        daemon.start()
    except build.BuildError as exc:
        daemon.stop()
        unavailable(f"private dockerd did not start: {exc}")
    try:
        docker = build.Docker(daemon.env)
        started = time.monotonic()
        try:
            timings = build.build_image(docker, TAG)
        except build.BuildError as exc:
            unavailable(f"image build failed: {exc}")
        timings["total"] = time.monotonic() - started
        print(f"\nax-task-runner image built: {timings}", file=sys.stderr)
        yield DockerEnv(docker, TAG, timings)
    finally:
        daemon.stop()
        after = host_network_state()
        assert after == before, "the private dockerd changed host links or firewall rules"
        assert not daemon.root.exists()
