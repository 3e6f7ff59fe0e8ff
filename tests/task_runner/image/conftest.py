"""A private dockerd and the ax-task-runner image, once per test session.

The daemon runs with no bridge, no iptables and no ip forwarding (docker/build.py);
containers use ``--network none`` (or ``host``). The debootstrap base is cached under
``.cache/ax-task-runner`` so only the first run pays for it. When Docker cannot be used
the tests skip loudly, or fail under ``CI=true``. At the end the daemon is stopped, its
folder removed, and the host's links and firewall rules must be as they were.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator

import pytest

from .helpers import TAG, DockerEnv, build, host_network_state, unavailable


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
