"""The real runner as a subprocess, and a real grpcio client for its guest services.

The client speaks to ``127.0.0.1:<port>`` over an insecure channel: HTTP/2 with prior
knowledge (h2c) on the same port as the runner's HTTP endpoints, as ``ax ssh`` does.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from .client import GuestClient
from .helpers import Runner, run_runner


@pytest.fixture(scope="module")
def debug_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    with run_runner(tmp_path_factory.mktemp("guest-debug"), debug=True) as runner:
        yield runner


@pytest.fixture(scope="module")
def plain_runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    with run_runner(tmp_path_factory.mktemp("guest-plain"), debug=False) as runner:
        yield runner


@pytest.fixture(scope="module")
def guest(debug_runner: Runner) -> Iterator[GuestClient]:
    with grpc.insecure_channel(f"127.0.0.1:{debug_runner.port}") as channel:
        yield GuestClient(channel)


@pytest.fixture(scope="module")
def plain_guest(plain_runner: Runner) -> Iterator[GuestClient]:
    with grpc.insecure_channel(f"127.0.0.1:{plain_runner.port}") as channel:
        yield GuestClient(channel)
