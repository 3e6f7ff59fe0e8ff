"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

from helpers.system_parts import not_run

REPO = Path(__file__).resolve().parents[3]


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
