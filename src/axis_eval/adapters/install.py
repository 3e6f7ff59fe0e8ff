"""Pinned agent CLIs, installed from npm into a cache axis-eval controls (never global).

Layout: ``$AXIS_AGENTS_DIR/<package>@<version>/node_modules/.bin/<bin>``; the default
folder is ``$XDG_CACHE_HOME/axis-eval/agents`` (``~/.cache/axis-eval/agents``). A finished
install writes ``.axis-installed``; anything without it is treated as absent and redone.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from axis_eval._util.processes import HelperTimeout, run_helper
from axis_eval.errors import AxisError, PreflightError, UsageError
from axis_eval.files import atomic_write_text

INSTALL_TIMEOUT_S = 900.0
MARKER = ".axis-installed"


@dataclass(frozen=True)
class AgentPackage:
    """An npm package that provides an agent CLI, at a pinned version."""

    package: str
    version: str
    bin: str

    @property
    def spec(self) -> str:
        """``package@version``."""
        return f"{self.package}@{self.version}"

    @property
    def folder_name(self) -> str:
        """A folder name for this package and version."""
        return re.sub(r"[^A-Za-z0-9._@-]+", "+", self.package.lstrip("@")) + f"@{self.version}"


_CLAUDE = AgentPackage("@anthropic-ai/claude-code", "2.1.197", "claude")
_CODEX = AgentPackage("@openai/codex", "0.171.0", "codex")
_GEMINI = AgentPackage("@google/gemini-cli", "0.61.0", "gemini")

PINS: dict[str, AgentPackage] = {
    "claude-code": _CLAUDE,
    "codex": _CODEX,
    "gemini": _GEMINI,
    "gemini-acp": _GEMINI,
    "claude-sdk": AgentPackage(
        "@agentclientprotocol/claude-agent-acp", "0.49.0", "claude-agent-acp"
    ),
    "codex-sdk": AgentPackage("@zed-industries/codex-acp", "0.16.0", "codex-acp"),
    "qwen-code": AgentPackage("@qwen-code/qwen-code", "0.15.10", "qwen"),
    "opencode": AgentPackage("opencode-ai", "1.18.33", "opencode"),
}
"""Built-in agents whose CLIs install from npm, with the versions proven here."""


class InstallError(AxisError):
    """npm could not install an agent CLI."""


def agents_dir() -> Path:
    """Where pinned CLIs live: ``$AXIS_AGENTS_DIR``, else the user cache folder."""
    explicit = os.environ.get("AXIS_AGENTS_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "axis-eval" / "agents"


def package_dir(pkg: AgentPackage) -> Path:
    """The install folder of one pinned package."""
    return agents_dir() / pkg.folder_name


def installed_binary(name: str) -> Path | None:
    """The cached CLI of a built-in agent, when its pinned version is installed."""
    pkg = PINS.get(name)
    if pkg is None:
        return None
    folder = package_dir(pkg)
    binary = folder / "node_modules" / ".bin" / pkg.bin
    if (folder / MARKER).is_file() and binary.exists():
        return binary
    return None


def install_command(names: Iterable[str]) -> str:
    """The command a user runs to install these agents."""
    return "axis agents install " + " ".join(names)


def resolve_binary(name: str, fallback: str) -> str:
    """The CLI to run for a built-in: the pinned cache install, else ``fallback`` on PATH.

    Raises:
        PreflightError: neither exists; the message gives the install command.
    """
    cached = installed_binary(name)
    if cached is not None:
        return str(cached)
    found = shutil.which(fallback)
    if found:
        return found
    pkg = PINS.get(name)
    hint = (
        f"run `{install_command([name])}` (installs {pkg.spec} into {agents_dir()})"
        if pkg
        else f"install `{fallback}` and put it on PATH"
    )
    raise PreflightError(f"the {name!r} agent's CLI ({fallback}) is not installed", hint=hint)


def install(
    names: Iterable[str],
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, Path]:
    """Install the pinned CLIs of ``names`` (skipping those already installed).

    Raises:
        InstallError: an unknown name, npm missing, or npm failing.
    """
    npm = shutil.which("npm")
    out: dict[str, Path] = {}
    for name in names:
        pkg = PINS.get(name)
        if pkg is None:
            from axis_eval.config._problems import did_you_mean

            # A name the user typed: a usage error (exit 2), not a failed install.
            raise UsageError(
                f"no pinned npm package for agent {name!r}{did_you_mean(name, PINS)}",
                hint=f"installable: {', '.join(sorted(PINS))}",
            )
        existing = installed_binary(name)
        if existing is not None and not force:
            out[name] = existing
            continue
        if npm is None:
            raise InstallError("npm is not on PATH", hint="install Node.js and npm")
        folder = package_dir(pkg)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        log(f"installing {pkg.spec} into {folder}")
        argv = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                "--loglevel=error", pkg.spec]  # fmt: skip
        try:
            done = run_helper(argv, cwd=str(folder), timeout_s=INSTALL_TIMEOUT_S)
        except HelperTimeout as exc:
            raise InstallError(f"npm install {pkg.spec} timed out") from exc
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
            raise InstallError(f"npm install {pkg.spec} failed:\n{tail}")
        binary = folder / "node_modules" / ".bin" / pkg.bin
        if not binary.exists():
            raise InstallError(f"{pkg.spec} installed but has no {pkg.bin} binary")
        atomic_write_text(folder / MARKER, pkg.spec + "\n")
        out[name] = binary
    return out


_VERSIONS: dict[str, str] = {}


def cli_version(binary: str) -> str | None:
    """``<binary> --version``, first line, cached per binary; None when it fails."""
    if binary in _VERSIONS:
        return _VERSIONS[binary]
    try:
        done = run_helper([binary, "--version"], timeout_s=30.0)
    except (HelperTimeout, OSError):
        return None
    if done.returncode != 0:
        return None
    lines = (done.stdout.strip() or done.stderr.strip()).splitlines()
    version = lines[0].strip() if lines else None
    if version:
        _VERSIONS[binary] = version
    return version
