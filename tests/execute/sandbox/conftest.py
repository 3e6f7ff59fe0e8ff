"""The docker sandbox's Docker daemon and agent image, once per test session.

A private dockerd as tests/task_runner/image starts one (docker/build.py: no bridge, no
iptables, no ip forwarding; containers use ``--network none`` or ``host``), whose data root
is kept in ``.cache/ax-task-runner/dockerd-sandbox``: the agent image it holds survives
between sessions, so a warm session only rebuilds the project's layer (docker/build_agents.py
caches the imported base and the agents' layer). The test image holds the one agent CLI the
tests run (Claude Code, when the pinned cache has it). When Docker cannot be used the tests
skip loudly, or fail under ``CI=true``. At the end the daemon is stopped and the host's links
and firewall rules must be as they were.
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
from typing import NoReturn

import pytest

from helpers.system_parts import not_run
from task_runner.image.helpers import REPO, build, host_network_state

AGENT_IMAGE = "axis-eval/ax-agents:test"
DATA_ROOT = build.CACHE / "dockerd-sandbox"


def _load_build_agents() -> ModuleType:
    name = "ax_agent_image_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "docker" / "build_agents.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


build_agents = _load_build_agents()


def unavailable(reason: str) -> NoReturn:
    """Skip loudly, or fail under CI=true."""
    not_run("DOCKER SANDBOX TEST", reason)


@dataclass
class AgentDocker:
    """The session's daemon with the agent image built in it."""

    env: dict[str, str]
    image: str
    agents: list[str]
    """The agent-CLI folders the image holds."""
    timings: dict[str, float]

    def __call__(
        self, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["docker", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args[:3])}: {done.stderr}")
        return done

    def labelled(self, label: str) -> list[str]:
        """Ids of the containers (any state) carrying ``label`` (``key=value``)."""
        out = self("ps", "-aq", "--no-trunc", "--filter", f"label={label}").stdout
        return out.split()


@pytest.fixture(scope="session")
def agent_docker() -> Iterator[AgentDocker]:
    if os.geteuid() != 0:
        unavailable("needs root to start a private dockerd (run `make test` as root)")
    for tool in ("dockerd", "docker"):
        if shutil.which(tool) is None:
            unavailable(f"{tool} is missing (`make system-deps` installs docker.io)")
    packages = build_agents.NODE_PACKAGES
    cached = (build.CACHE / f"nodebase-{build.SUITE}-{build.base_key(packages)}.tar").exists()
    if not cached and shutil.which("debootstrap") is None:
        unavailable("debootstrap is missing and no base rootfs is cached (`make system-deps`)")
    before = host_network_state()
    daemon = build.PrivateDockerd(data_root=DATA_ROOT)
    try:
        daemon.start()
    except build.BuildError as exc:
        daemon.stop()
        unavailable(f"private dockerd did not start: {exc}")
    try:
        docker = build.Docker(daemon.env)
        leftovers = docker("ps", "-aq", check=False).stdout.split()
        if leftovers:  # an earlier session that was killed
            docker("rm", "-f", *leftovers, check=False)
        agents_dir = Path(os.environ.get("AXIS_AGENTS_DIR", REPO / ".cache" / "agents"))
        started = time.monotonic()
        try:
            built = build_agents.build_agent_image(
                docker, AGENT_IMAGE, agents_dir=agents_dir, only=["claude-code"]
            )
        except build.BuildError as exc:
            unavailable(f"agent image build failed: {exc}")
        build_agents.prune_images(docker, [*built.bases, AGENT_IMAGE])
        built.timings["total"] = time.monotonic() - started
        print(f"\nagent image built: {built.timings}", file=sys.stderr)
        env = dict(daemon.env)
        yield AgentDocker(env, AGENT_IMAGE, list(built.choice.included), built.timings)
    finally:
        daemon.stop()
        after = host_network_state()
        assert after == before, "the private dockerd changed host links or firewall rules"
        assert not daemon.root.exists()


@pytest.fixture
def docker_sandbox(agent_docker: AgentDocker, monkeypatch: pytest.MonkeyPatch) -> AgentDocker:
    """The session's daemon as this process's Docker (what the sandbox's CLI calls reach)."""
    monkeypatch.setenv("DOCKER_HOST", agent_docker.env["DOCKER_HOST"])
    monkeypatch.delenv("DOCKER_CONTEXT", raising=False)
    return agent_docker
