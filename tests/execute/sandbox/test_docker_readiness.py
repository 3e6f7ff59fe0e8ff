"""How the docker sandbox knows a container's runner is up (no daemon needed): the runner's
flags make its socket file the readiness, and a runner too old for them is named so."""

from __future__ import annotations

import importlib

from ax_task_runner.__main__ import build_parser
from axis_eval.execute.sandbox import docker
from axis_eval.execute.sandbox.containers import ContainerSpec, run_args


def test_the_runner_flags_parse_and_listen_only_once_ready() -> None:
    args = run_args(ContainerSpec(image="i", name="n", shared_dir="/s", labels={}))
    flags = args[args.index("i") + 1 :]
    assert flags[0] == "--guest-services-only"  # its socket appears once the services answer
    parsed = build_parser().parse_args(flags)
    assert parsed.guest_only and parsed.unix_socket == "/run/axis-guest/guest.sock"
    assert parsed.task_file is None and parsed.state_dir is None


def test_a_runner_older_than_its_flags_is_named_as_such() -> None:
    old = (
        "exited 2; its log ends:\nusage: ax-task-runner [-h] ...\n"
        "ax-task-runner: error: unrecognized arguments: --guest-services-only"
    )
    assert "older than this axis-eval" in docker._stopped_hint(old)
    assert "make build-agent-image" in docker._stopped_hint(old)
    assert "entrypoint ax-task-runner" in docker._stopped_hint("exited 127; its log ends:\nx")


def test_the_client_modules_loaded_ahead_exist() -> None:
    for name in docker.CLIENT_MODULES:
        assert importlib.import_module(name).__name__ == name
