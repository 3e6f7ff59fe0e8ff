"""Build the agent image (the ``docker`` sandbox's default) with no registry pull.

Used by `make build-agent-image` and by tests/execute/sandbox/test_docker_sandbox.py.

The image is the ax-task-runner image (docker/build.py, docs/runner-image.md) built on a
base that also holds Debian's ``nodejs``, plus the pinned agent CLIs of the project cache:

* Base: a second cached `debootstrap --variant=minbase` rootfs whose ``--include`` list adds
  ``nodejs`` to the runner's (``.cache/ax-task-runner/nodebase-bookworm-<key>.tar``), and
  the runner's dependencies appended as for the runner image (``noderuntime-…tar``). The
  first build pays for debootstrap once; every later one imports the cached tarball.
* Agents: each ``<package>@<version>`` folder of the agent cache (``AXIS_AGENTS_DIR``, as
  ``axis agents install`` fills it) with a finished install is copied to
  ``/opt/axis-agents/<same folder>``, when its ``package.json`` ``engines.node`` accepts the
  image's node (bookworm's nodejs is 18: Gemini CLI and Qwen Code ask for 20 and are left
  out, named in the log and in ``/opt/axis-agents/.axis-agents.json``). The docker sandbox
  links the host's agent folder to ``/opt/axis-agents`` in each container, so the paths
  the adapters put on the command line resolve there unchanged.
* docker/Dockerfile.agents only COPYs: the build starts no container, needs no network.

CLI: ``python docker/build_agents.py [--tag TAG] [--agents claude-code,codex] [--save PATH]
[--private]``; like docker/build.py it builds into the daemon that answers, else into a
private one and saves the image to a tar.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess  # noqa: TID251 - a build tool, not runner code
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DOCKERFILE = HERE / "Dockerfile.agents"
AGENTS_IN_IMAGE = "/opt/axis-agents"
"""Where the image holds the agent CLIs (the sandbox links the host's agent folder here)."""
MANIFEST = ".axis-agents.json"
INSTALLED_MARKER = ".axis-installed"  # axis_eval.adapters.install.MARKER


def _load_build() -> ModuleType:
    """docker/build.py, shared with the tests that load it by path (one module object)."""
    name = "ax_runner_image_build"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


build = _load_build()
NODE_PACKAGES = (*build.BASE_PACKAGES, "nodejs")


def default_tag() -> str:
    """The docker sandbox's default image (defined in axis_eval.config.sandbox)."""
    try:
        from axis_eval.config.sandbox import DEFAULT_AGENT_IMAGE
    except ImportError:  # run with a Python that does not have the project installed
        return "axis-eval/ax-agents:dev"
    return DEFAULT_AGENT_IMAGE


def default_agents_dir() -> Path:
    """``$AXIS_AGENTS_DIR``, else the project cache (what the Makefile exports)."""
    explicit = os.environ.get("AXIS_AGENTS_DIR")
    return Path(explicit).expanduser().resolve() if explicit else REPO / ".cache" / "agents"


# --------------------------------------------------------------------------- node versions


def _version(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def node_version_in(tar: Path) -> tuple[int, int, int]:
    """The nodejs version installed in a rootfs tarball (from its dpkg status)."""
    done = subprocess.run(
        ["tar", "-xOf", str(tar), "./var/lib/dpkg/status"],
        capture_output=True,
        check=False,
        timeout=300,
    )
    status = done.stdout.decode("utf-8", "replace")
    for stanza in status.split("\n\n"):
        if re.search(r"^Package: nodejs$", stanza, re.MULTILINE):
            match = re.search(r"^Version: (?:\d+:)?([\d.]+)", stanza, re.MULTILINE)
            if match:
                return _version(match[1])
    raise build.BuildError(f"no nodejs package in {tar.name} (dpkg status)")


_COMPARATOR = re.compile(r"^(>=|<=|>|<|=|\^|~)?\s*v?(\d+(?:\.(?:\d+|x|\*))*)$")


def _clause_ok(clause: str, node: tuple[int, int, int]) -> bool | None:
    """Whether ``node`` meets every comparator of one ``||`` branch (None: unreadable)."""
    tokens = re.sub(r"(>=|<=|>|<|=|\^|~)\s+", r"\1", clause).split()
    if not tokens:
        return True
    for token in tokens:
        if token in ("*", "x", "latest"):
            continue
        match = _COMPARATOR.match(token)
        if match is None:
            return None
        op, text = match[1] or "=", match[2]
        fixed = [p for p in text.split(".") if p not in ("x", "*")]
        want = _version(".".join(fixed))
        if op in ("=", "^", "~") and len(fixed) < 3:
            op = "^" if len(fixed) == 1 or op == "^" else "~"
        if op == ">=" and not node >= want:
            return False
        if op == ">" and not node > want:
            return False
        if op == "<=" and not node <= want:
            return False
        if op == "<" and not node < want:
            return False
        if op == "=" and node != want:
            return False
        if op == "^" and not (node >= want and node[0] == want[0]):
            return False
        if op == "~" and not (node >= want and node[:2] == want[:2]):
            return False
    return True


def node_accepts(engines: str | None, node: tuple[int, int, int]) -> bool | None:
    """Whether an ``engines.node`` range accepts ``node``; None when the range cannot be
    read (the package is then kept, with a note)."""
    if not engines or not engines.strip():
        return True
    unreadable = False
    for branch in engines.split("||"):
        ok = _clause_ok(branch.strip(), node)
        if ok:
            return True
        unreadable = unreadable or ok is None
    return None if unreadable else False


# --------------------------------------------------------------------------- agents


@dataclass
class AgentChoice:
    """The agent folders that go into the image, and those left out (with why)."""

    node: tuple[int, int, int]
    included: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def manifest(self) -> str:
        body = {
            "node": ".".join(map(str, self.node)),
            "agents": self.included,
            "skipped": self.skipped,
        }
        return json.dumps(body, indent=2) + "\n"


def _package_json(folder: Path) -> dict[str, object] | None:
    try:
        spec = (folder / INSTALLED_MARKER).read_text().strip()  # "<package>@<version>"
    except OSError:
        return None
    package = spec.rsplit("@", 1)[0] if "@" in spec[1:] else spec
    try:
        data = json.loads((folder / "node_modules" / package / "package.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def choose_agents(
    agents_dir: Path, node: tuple[int, int, int], only: Sequence[str] | None = None
) -> AgentChoice:
    """The installed agent folders of ``agents_dir`` (``only``: those whose folder name or
    ``<package>@<version>`` starts with one of these names) whose engines accept ``node``."""
    choice = AgentChoice(node)
    if not agents_dir.is_dir():
        return choice
    wanted = [_folder_prefix(name) for name in only] if only else None
    for folder in sorted(p for p in agents_dir.iterdir() if p.is_dir()):
        if wanted is not None and not any(folder.name.startswith(w) for w in wanted):
            continue
        data = _package_json(folder)
        if data is None:
            choice.skipped[folder.name] = "not a finished install (no .axis-installed)"
            continue
        engines = data.get("engines")
        wants = engines.get("node") if isinstance(engines, dict) else None
        ok = node_accepts(wants if isinstance(wants, str) else None, node)
        shown = ".".join(map(str, node))
        if ok is False:
            choice.skipped[folder.name] = f"needs node {wants}; the image has {shown}"
            continue
        if ok is None:
            choice.notes.append(f"{folder.name}: cannot read engines.node {wants!r}; kept")
        choice.included.append(folder.name)
    return choice


def _folder_prefix(name: str) -> str:
    """An agent name (``claude-code``) as the start of its cache folder name."""
    try:
        from axis_eval.adapters.install import PINS
    except ImportError:
        return name
    pin = PINS.get(name)
    return pin.folder_name if pin is not None else name


def _link_or_copy(source: str, destination: str) -> None:
    # Hard links when the cache and the build context share a filesystem: no copy of the
    # ~1 GB of CLIs for a context docker reads once.
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


AGENTS_LAYER = f"""\
ARG BASE_IMAGE
FROM ${{BASE_IMAGE}}
COPY agents/ {AGENTS_IN_IMAGE}/
"""
"""The agents' own image (built once per base and agent set, then reused): the final image
adds only the project on top, so a rebuild after a code change sends no CLI again."""


def add_agents(ctx: Path, agents_dir: Path, choice: AgentChoice) -> None:
    """Put the chosen agent folders (and the manifest) in the build context's agents/."""
    target = ctx / "agents"
    target.mkdir()
    for name in choice.included:
        shutil.copytree(
            agents_dir / name, target / name, symlinks=True, copy_function=_link_or_copy
        )
    (target / MANIFEST).write_text(choice.manifest())


def agents_key(base_ref: str, agents_dir: Path, choice: AgentChoice) -> str:
    installed = []
    for name in choice.included:
        with contextlib.suppress(OSError):
            installed.append((agents_dir / name / INSTALLED_MARKER).read_text().strip())
    return build._digest("agents-v1", base_ref, choice.included, installed, choice.skipped)


def agents_image(docker: Any, base_ref: str, agents_dir: Path, choice: AgentChoice) -> str:
    """``FROM base_ref`` plus the chosen CLIs at /opt/axis-agents (built when missing)."""
    ref = f"axis-eval/ax-agents-base:{agents_key(base_ref, agents_dir, choice)}"
    if docker.has_image(ref):
        return ref
    with tempfile.TemporaryDirectory(
        prefix="ax-agents-ctx-", dir=_context_parent(agents_dir)
    ) as tmp:
        ctx = Path(tmp)
        add_agents(ctx, agents_dir, choice)
        (ctx / "Dockerfile").write_text(AGENTS_LAYER)
        build.log(f"docker build → {ref} ({len(choice.included)} agent CLIs)")
        docker(
            "build", "--network", "none", "--build-arg", f"BASE_IMAGE={base_ref}",
            "-t", ref, str(ctx), timeout=1800,
        )  # fmt: skip
    return ref


def _context_parent(agents_dir: Path) -> str | None:
    """A folder on the agent cache's filesystem, so the context is hard links."""
    parent = agents_dir.parent
    return str(parent) if os.access(parent, os.W_OK) else None


@dataclass
class AgentImage:
    """A built agent image: its step timings, the agents chosen, the images it stands on."""

    tag: str
    timings: dict[str, float]
    choice: AgentChoice
    bases: tuple[str, str]
    """The imported runtime and the agents' layer image."""


def prune_images(docker: Any, keep: Sequence[str]) -> None:
    """Remove the base and agents images of earlier builds (other keys) and dangling ones."""
    listed = docker("images", "--format", "{{.Repository}}:{{.Tag}}", check=False).stdout
    ours = ("axis-eval/ax-agents-base:", "axis-eval/ax-task-runner-nodebase:")
    stale = [ref for ref in listed.split() if ref.startswith(ours) and ref not in keep]
    if stale:
        docker("rmi", "-f", *stale, check=False)
    docker("image", "prune", "-f", check=False)


def build_agent_image(
    docker: Any,
    tag: str | None = None,
    *,
    agents_dir: Path | None = None,
    only: Sequence[str] | None = None,
) -> AgentImage:
    """Build the agent image into ``docker``'s daemon (a ``build.Docker``)."""
    tag = tag or default_tag()
    folder = agents_dir or default_agents_dir()
    timings: dict[str, float] = {}
    started = time.monotonic()
    base_ref, timings["base_and_deps"] = build.import_base(docker, NODE_PACKAGES)
    timings["import"] = time.monotonic() - started - timings["base_and_deps"]
    node = node_version_in(build.base_tarball(NODE_PACKAGES))
    choice = choose_agents(folder, node, only)
    for name, why in choice.skipped.items():
        build.log(f"agent image: leaving out {name}: {why}")
    for note in choice.notes:
        build.log(f"agent image: {note}")
    if not choice.included:
        build.log(f"agent image: no agent CLI found in {folder} (`make agents` installs them)")
    build.log(f"agent image: node {'.'.join(map(str, node))}, agents {choice.included}")
    t0 = time.monotonic()
    agents_ref = agents_image(docker, base_ref, folder, choice)
    timings["agents"] = time.monotonic() - t0
    source = source_key(agents_ref)
    if _label(docker, tag, SOURCE_LABEL) == source:
        build.log(f"agent image: {tag} is up to date (source {source})")
        return AgentImage(tag, timings, choice, (base_ref, agents_ref))
    with tempfile.TemporaryDirectory(prefix="ax-agents-df-") as tmp:
        dockerfile = Path(tmp) / "Dockerfile"
        text = DOCKERFILE.read_text() + f'\nLABEL {SOURCE_LABEL}="{source}"\n'
        dockerfile.write_text(text)
        timings.update(build.build_image(docker, tag, dockerfile=dockerfile, base_ref=agents_ref))
    return AgentImage(tag, timings, choice, (base_ref, agents_ref))


SOURCE_LABEL = "axis-eval.source"
"""The final image's label: a digest of what it was built from (the agents' image, the
project's sources), so an image already built from the same is not built again."""


def source_key(agents_ref: str) -> str:
    """A digest of the project's packaged sources (what the wheel holds) and the base."""
    digest = hashlib.sha256(agents_ref.encode())
    for name in ("pyproject.toml", "docker/Dockerfile.agents"):
        digest.update((REPO / name).read_bytes())
    for path in sorted((REPO / "src").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(str(path.relative_to(REPO)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _label(docker: Any, ref: str, name: str) -> str | None:
    done = docker(
        "image", "inspect", "-f", f'{{{{index .Config.Labels "{name}"}}}}', ref, check=False
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default=None, help=f"image tag (default {default_tag()})")
    parser.add_argument(
        "--agents", default="", help="comma-separated agent names (default: every installed)"
    )
    parser.add_argument("--agents-dir", type=Path, default=None, help="the agent CLI cache")
    parser.add_argument("--save", type=Path, help="docker save the image to this tar")
    parser.add_argument(
        "--private",
        action="store_true",
        help="always build in a private, temporary dockerd (the image is then saved)",
    )
    args = parser.parse_args(argv)
    tag = args.tag or default_tag()
    only = [a for a in args.agents.split(",") if a] or None
    started = time.monotonic()
    try:
        docker = None if args.private else build.ambient_docker()
        if docker is not None:
            timings = build_agent_image(docker, tag, agents_dir=args.agents_dir, only=only).timings
            if args.save:
                docker("save", "-o", str(args.save), tag)
        else:
            save = args.save or build.CACHE / (tag.replace("/", "_").replace(":", "_") + ".tar")
            build.log("no Docker daemon answers; building in a private one (image saved to a tar)")
            with build.PrivateDockerd() as daemon:
                docker = build.Docker(daemon.env)
                built = build_agent_image(docker, tag, agents_dir=args.agents_dir, only=only)
                timings = built.timings
                docker("save", "-o", str(save), tag)
            build.log(f"saved {tag} to {save}: `docker load -i {save}`")
    except build.BuildError as exc:
        build.log(f"FAILED: {exc}")
        return 1
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    build.log(f"built {tag} in {time.monotonic() - started:.1f} s ({steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
