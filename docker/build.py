"""Build the ax-task-runner image with no registry pull, and run a private Docker daemon.

Used by `make build-task-runner`, by tests/task_runner/image and by bench/runner.py.

* The base image is a `debootstrap --variant=minbase` Debian bookworm rootfs (Python 3,
  python3-venv, git, CA certificates) fed to `docker import`. The rootfs tarball is cached
  under `.cache/ax-task-runner/`, so only the first build pays for debootstrap.
* The runner's dependencies are installed on the host with
  `pip install --target --only-binary=:all: --platform manylinux… --python-version 3.11`
  (the interpreter the base ships) and cached under the same folder, keyed on the
  project's dependency list. The project itself is built into a wheel on every build.
* The Dockerfile (docker/Dockerfile) only COPYs: the build starts no container and needs
  no network (`docker build --network none`, legacy builder).
* `PrivateDockerd` starts `dockerd` with `--bridge=none --iptables=false --ip6tables=false
  --ip-forward=false` and its data/exec roots in a temporary folder, so it creates no
  network, no iptables rule and touches no sysctl; containers use `--network none` or
  `--network host`. `stop()` removes every container, stops the daemon and deletes the
  folder.

CLI: `python docker/build.py [--tag TAG] [--save PATH] [--private]`. It builds into the
daemon that `docker info` reaches, or, when none answers (or with `--private`), into a
private daemon started for the build; the image is then saved with `docker save` (default
`.cache/ax-task-runner/<tag>.tar`) so `docker load -i` can bring it anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess  # noqa: TID251 - a build tool, not runner code
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "ax-task-runner"
DOCKERFILE = Path(__file__).resolve().parent / "Dockerfile"
DEFAULT_TAG = "axis-eval/ax-task-runner:dev"

SUITE = "bookworm"
MIRROR = os.environ.get("AX_DEBIAN_MIRROR", "http://deb.debian.org/debian")
BASE_PACKAGES = ("python3", "python3-venv", "git", "ca-certificates")
# The interpreter of Debian bookworm: wheels for the image are chosen for it, not the host.
IMAGE_PYTHON = ("3.11", "cp311")
RUNNER_PATH = "/usr/local/bin/ax-task-runner"

LAUNCHER = """\
#!/usr/bin/python3 -Iu
# ax-task-runner launcher (axis-eval image): the runner and its dependencies live in
# /opt/ax-task-runner/site, apart from the system Python's packages. -I keeps PYTHONPATH and
# the user site (which a task's spec.env may set for its command) away from the runner.
# main() is called directly: runpy would load importlib.util (~8 ms of a cold start).
import sys

sys.path.insert(0, "/opt/ax-task-runner/site")
sys.argv[0] = "ax-task-runner"
from ax_task_runner.__main__ import main

sys.exit(main())
"""


class BuildError(RuntimeError):
    """A step of the image build failed; the message says which and why."""


def log(message: str) -> None:
    print(f"[ax-task-runner image] {message}", file=sys.stderr, flush=True)


def _run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in argv],
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        shown = " ".join(str(a) for a in argv[:6])
        raise BuildError(f"`{shown} …` exited {proc.returncode}:\n{tail}")
    return proc


def _pip(command: str, *args: str) -> None:
    quiet = ("--quiet", "--disable-pip-version-check")
    extra = ("--no-warn-script-location",) if command == "install" else ()
    _run([sys.executable, "-m", "pip", command, *quiet, *extra, *args], timeout=900)


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- base rootfs


def base_key(packages: Sequence[str] = BASE_PACKAGES) -> str:
    return _digest("base-v1", SUITE, MIRROR, tuple(packages), platform.machine())


def _flavor_prefix(packages: Sequence[str]) -> str:
    """``base`` for the runner's package list; another list is a flavor of its own, cached
    under its own name (so pruning stale tarballs of one never deletes the other's)."""
    return "base" if tuple(packages) == BASE_PACKAGES else "nodebase"


def base_tarball(packages: Sequence[str] = BASE_PACKAGES) -> Path:
    """The cached debootstrap rootfs as a tar; built on first use (about a minute).

    ``packages``: the ``--include`` list (the runner's by default; the agent image adds
    Debian's nodejs, docker/build_agents.py)."""
    prefix = _flavor_prefix(packages)
    tar = CACHE / f"{prefix}-{SUITE}-{base_key(packages)}.tar"
    if tar.exists():
        return tar
    with _locked(prefix):
        if tar.exists():
            return tar
        if os.geteuid() != 0:
            raise BuildError("debootstrap needs root to build the base rootfs")
        debootstrap = shutil.which("debootstrap")
        if debootstrap is None:
            raise BuildError("debootstrap is not installed (apt-get install debootstrap)")
        work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=CACHE))
        rootfs = work / "rootfs"
        started = time.monotonic()
        log(f"debootstrap {SUITE} minbase + {','.join(packages)} (first build only)…")
        try:
            _run(
                [
                    debootstrap,
                    "--variant=minbase",
                    f"--include={','.join(packages)}",
                    SUITE,
                    rootfs,
                    MIRROR,
                ],
                timeout=1200,
            )
            # Trim what a runtime image does not need; `apt-get update` restores the lists.
            for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for entry in (rootfs / sub).glob("*"):
                    if entry.is_file():
                        entry.unlink()
            for sub in ("usr/share/doc", "usr/share/man", "usr/share/info"):
                shutil.rmtree(rootfs / sub, ignore_errors=True)
                (rootfs / sub).mkdir(parents=True, exist_ok=True)
            partial = tar.with_suffix(".tar.partial")
            _run(["tar", "--numeric-owner", "-C", rootfs, "-cf", partial, "."], timeout=600)
            partial.rename(tar)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log(f"base rootfs cached at {tar} ({time.monotonic() - started:.0f} s)")
        for stale in CACHE.glob(f"{prefix}-{SUITE}-*.tar"):
            if stale != tar:
                stale.unlink(missing_ok=True)
        return tar


# --------------------------------------------------------------------------- python payload


def _pip_target_args() -> list[str]:
    machine = platform.machine()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
        machine, machine
    )
    version, abi = IMAGE_PYTHON
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", version]
    args += ["--abi", abi, "--abi", "abi3", "--abi", "none"]
    # bookworm's glibc is 2.36: accept every manylinux wheel up to it.
    for tag in ("manylinux_2_36", "manylinux_2_28", "manylinux2014", "manylinux2010"):
        args += ["--platform", f"{tag}_{arch}"]
    args += ["--platform", "any"]
    return args


def project_dependencies() -> list[str]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    deps = data.get("project", {}).get("dependencies", [])
    return [str(d) for d in deps]


def deps_key() -> str:
    return _digest("deps-v1", project_dependencies(), IMAGE_PYTHON, platform.machine())


def runtime_tarball(packages: Sequence[str] = BASE_PACKAGES) -> Path:
    """The base rootfs plus the runner's dependencies under /opt/ax-task-runner/site.

    Cached by base and dependency list: a rebuild after a code change imports this one tar
    and COPYs only the project (tens of files), instead of the ~12,000 dependency files.
    """
    key = _digest(base_key(packages), deps_key())
    prefix = "runtime" if _flavor_prefix(packages) == "base" else "noderuntime"
    tar = CACHE / f"{prefix}-{SUITE}-{key}.tar"
    if tar.exists():
        return tar
    base = base_tarball(packages)
    with _locked(f"{prefix}-deps"):
        if tar.exists():
            return tar
        deps = project_dependencies()
        started = time.monotonic()
        log(f"installing {len(deps)} runtime dependencies for CPython {IMAGE_PYTHON[0]}…")
        work = Path(tempfile.mkdtemp(prefix="deps-", dir=CACHE))
        try:
            site = work / "opt" / "ax-task-runner" / "site"
            reqs = work / "requirements.txt"
            reqs.write_text("\n".join(deps) + "\n")
            _pip("install", "--target", str(site), "-r", str(reqs), *_pip_target_args())
            reqs.unlink()
            shutil.rmtree(site / "bin", ignore_errors=True)
            _compile(site)
            partial = tar.with_suffix(".tar.partial")
            shutil.copyfile(base, partial)
            owner = ("--numeric-owner", "--owner=0", "--group=0")
            _run(["tar", *owner, "-C", work, "-rf", partial, "./opt/ax-task-runner"], timeout=600)
            partial.rename(tar)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for stale in CACHE.glob(f"{prefix}-{SUITE}-*.tar"):
            if stale != tar:
                stale.unlink(missing_ok=True)
        log(f"dependencies ready ({time.monotonic() - started:.1f} s)")
        return tar


def _compile(site: Path) -> None:
    # Bytecode for the image's 3.11 (same magic number as any 3.11 host): the runner starts
    # without compiling, which keeps /healthz fast on a cold container.
    if sys.version_info[:2] != (3, 11):
        return
    mode = ("--invalidation-mode", "unchecked-hash")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j0", *mode, str(site)],
        check=False,
        capture_output=True,
        timeout=600,
    )


def app_site(dest: Path) -> Path:
    """Build the project wheel and unpack it (no dependencies) into dest."""
    dist = dest.parent / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    _pip("wheel", "--no-deps", "-w", str(dist), str(REPO))
    wheels = sorted(dist.glob("*.whl"))
    if not wheels:
        raise BuildError("pip wheel produced no wheel")
    _pip("install", "--no-deps", "--target", str(dest), str(wheels[-1]))
    shutil.rmtree(dest / "bin", ignore_errors=True)
    if not (dest / "ax_task_runner").is_dir():
        raise BuildError(
            "the axis-eval wheel holds no ax_task_runner package "
            "(pyproject [tool.hatch.build.targets.wheel] packages)"
        )
    _compile(dest)
    return dest


# --------------------------------------------------------------------------- docker


class PrivateDockerd:
    """A dockerd of our own: no bridge, no iptables, state in a temporary folder."""

    def __init__(self, data_root: Path | None = None) -> None:
        """``data_root``: keep the daemon's images there between sessions (a cache; used
        by one daemon at a time, else this one falls back to a temporary data root)."""
        # A short path: containerd's sockets live under the exec root (108-byte limit).
        self.root = Path(tempfile.mkdtemp(prefix="axd-", dir="/tmp"))
        self.sock = self.root / "docker.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.root / "dockerd.log"
        self.data_root = self.root / "data"
        self._kept = data_root
        self._lock: int | None = None

    def _claim_data_root(self) -> None:
        if self._kept is None:
            return
        self._kept.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._kept / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            log(f"{self._kept} is in use by another daemon; using a temporary data root")
            return
        self._lock = fd
        self.data_root = self._kept

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DOCKER_HOST"] = f"unix://{self.sock}"
        env["DOCKER_BUILDKIT"] = "0"
        env.pop("DOCKER_CONTEXT", None)
        return env

    def start(self, timeout: float = 60) -> None:
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise BuildError("dockerd is not installed (apt-get install docker.io)")
        if shutil.which("docker") is None:
            raise BuildError("the docker CLI is not installed (apt-get install docker.io)")
        if os.geteuid() != 0:
            raise BuildError("starting a private dockerd needs root")
        self._claim_data_root()
        # Its own mount namespace (util-linux `unshare`, which execs dockerd: same pid): the
        # overlay mounts of its images and containers then never show on the host, where a
        # bubblewrap sandbox starting meanwhile re-mounts every mount under `/` read-only
        # and fails on one that vanishes mid-way ("Can't bind mount /oldroot/...").
        unshare = shutil.which("unshare")
        isolate = [unshare, "--mount", "--propagation", "private"] if unshare else []
        argv = [
            *isolate,
            dockerd,
            "--data-root",
            str(self.data_root),
            "--exec-root",
            str(self.root / "exec"),
            "--pidfile",
            str(self.root / "dockerd.pid"),
            "-H",
            f"unix://{self.sock}",
            "--bridge=none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--ip-masq=false",
            "--userland-proxy=false",
            "--storage-driver=overlay2",
        ]
        logf = open(self.log_path, "wb")  # noqa: SIM115 - kept for the daemon's lifetime
        self.proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, close_fds=True)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BuildError(f"dockerd exited {self.proc.returncode}:\n{self.log_tail()}")
            if self.sock.exists():
                ok = subprocess.run(
                    ["docker", "version", "--format", "{{.Server.Version}}"],
                    env=self.env,
                    capture_output=True,
                    timeout=20,
                    check=False,
                )
                if ok.returncode == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise BuildError(f"dockerd did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def docker(
        self, *args: str, timeout: float = 300, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["docker", *args],
            env=self.env,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise BuildError(f"docker {' '.join(args[:4])} exited {proc.returncode}: {proc.stderr}")
        return proc

    def stop(self) -> None:
        """Remove every container, stop the daemon, delete its folder."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(Exception):
                ids = self.docker("ps", "-aq", timeout=30, check=False).stdout.split()
                if ids:
                    self.docker("rm", "-f", *ids, timeout=120, check=False)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        self.proc = None
        self._kill_leftovers()
        # The daemon unmounts its layers on a clean stop; a killed one may leave some.
        self._unmount_leftovers(str(self.root))
        if self.data_root != self.root / "data":
            self._unmount_leftovers(str(self.data_root))
        shutil.rmtree(self.root, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # the kept data root is free for the next daemon
            self._lock = None

    def _kill_leftovers(self) -> None:
        """containerd or shims of this daemon still running (only after a failed stop)."""
        marker = str(self.root).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker in cmdline:
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)  # noqa: TID251

    def _unmount_leftovers(self, prefix: str) -> None:
        try:
            mounts = Path("/proc/self/mounts").read_text().splitlines()
        except OSError:
            return
        targets = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
        for target in sorted(targets, key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)

    def __enter__(self) -> PrivateDockerd:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Docker:
    """The docker CLI against some daemon (a PrivateDockerd's, or the ambient one)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(env if env is not None else os.environ)
        self.env["DOCKER_BUILDKIT"] = "0"

    def __call__(
        self, *args: str, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["docker", *args],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise BuildError(
                f"docker {' '.join(args[:4])} exited {proc.returncode}: {proc.stderr.strip()}"
            )
        return proc

    def has_image(self, ref: str) -> bool:
        return self("image", "inspect", ref, check=False, timeout=60).returncode == 0


def import_base(docker: Docker, packages: Sequence[str] = BASE_PACKAGES) -> tuple[str, float]:
    """The cached runtime tarball (built when missing) as an image in docker's daemon
    (imported when missing); its reference and the seconds the tarball took."""
    t0 = time.monotonic()
    tar = runtime_tarball(packages)
    took = time.monotonic() - t0
    flavor = tar.stem.split("-", 1)[0]  # runtime / noderuntime
    name = "ax-task-runner-base" if flavor == "runtime" else "ax-task-runner-nodebase"
    base_ref = f"axis-eval/{name}:{tar.stem.removeprefix(flavor + '-')}"
    if not docker.has_image(base_ref):
        log(f"docker import {tar.name} → {base_ref}")
        docker(
            "import",
            "--change",
            'CMD ["/bin/bash"]',
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            str(tar),
            base_ref,
        )
    return base_ref, took


def build_image(
    docker: Docker,
    tag: str = DEFAULT_TAG,
    *,
    packages: Sequence[str] = BASE_PACKAGES,
    dockerfile: Path = DOCKERFILE,
    base_ref: str | None = None,
) -> dict[str, float]:
    """Build the runner image into docker's daemon; returns step timings in seconds.

    ``packages``, ``dockerfile`` and ``base_ref`` (an image to build on instead of the
    imported runtime of ``packages``) let docker/build_agents.py build the agent image the
    same way."""
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    if base_ref is None:
        base_ref, timings["base_and_deps"] = import_base(docker, packages)
        timings["import"] = time.monotonic() - t0 - timings["base_and_deps"]

    with tempfile.TemporaryDirectory(prefix="ax-image-ctx-") as tmp:
        ctx = Path(tmp) / "ctx"
        ctx.mkdir()
        t0 = time.monotonic()
        app_site(ctx / "site-app")
        timings["wheel"] = time.monotonic() - t0
        launcher = ctx / "ax-task-runner"
        launcher.write_text(LAUNCHER)
        launcher.chmod(0o755)
        shutil.copy(dockerfile, ctx / "Dockerfile")
        t0 = time.monotonic()
        log(f"docker build → {tag}")
        docker(
            "build",
            "--network",
            "none",
            "--build-arg",
            f"BASE_IMAGE={base_ref}",
            "-t",
            tag,
            str(ctx),
            timeout=900,
        )
        timings["docker_build"] = time.monotonic() - t0
    return timings


def ambient_docker() -> Docker | None:
    """The daemon the environment points at, when one answers."""
    if shutil.which("docker") is None:
        return None
    docker = Docker()
    ok = docker("version", "--format", "{{.Server.Version}}", check=False, timeout=20)
    return docker if ok.returncode == 0 else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", default=DEFAULT_TAG)
    parser.add_argument("--save", type=Path, help="docker save the image to this tar")
    parser.add_argument(
        "--private",
        action="store_true",
        help="always build in a private, temporary dockerd (the image is then saved)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        docker = None if args.private else ambient_docker()
        if docker is not None:
            timings = build_image(docker, args.tag)
            if args.save:
                docker("save", "-o", str(args.save), args.tag)
        else:
            save = args.save or CACHE / (args.tag.replace("/", "_").replace(":", "_") + ".tar")
            log("no Docker daemon answers; building in a private one (image saved to a tar)")
            with PrivateDockerd() as daemon:
                docker = Docker(daemon.env)
                timings = build_image(docker, args.tag)
                docker("save", "-o", str(save), args.tag)
            log(f"saved {args.tag} to {save}: `docker load -i {save}`")
    except BuildError as exc:
        log(f"FAILED: {exc}")
        return 1
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    log(f"built {args.tag} in {time.monotonic() - started:.1f} s ({steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
