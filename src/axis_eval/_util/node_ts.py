"""Running TypeScript modules (``.ts``/``.mts``/``.cts``) under Node.

Two ways, chosen by :func:`typescript_node_args`:

- Node's own type stripping (Node >= 22.6 with ``--experimental-strip-types``; on by
  default from 22.18/23.6), probed once per Node binary by running it;
- else the pinned npm package ``tsx`` (:data:`TSX_SPEC`), installed into axis-eval's cache
  next to the pinned agent CLIs (``axis agents install --typescript``) and preloaded with
  ``node --import <its loader>``.

``AXIS_TS_LOADER`` picks one: ``auto`` (the default: Node's own when it has it, else tsx),
``node`` or ``tsx``. Type-only imports (``import type {AxisConfig} from "@netlify/axis"``)
are erased by both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from axis_eval._util.processes import HelperTimeout, run_helper
from axis_eval.errors import AxisError, PreflightError
from axis_eval.files import atomic_write_text

TS_SUFFIXES = (".ts", ".mts", ".cts")
TSX_PACKAGE = "tsx"
TSX_VERSION = "4.23.15"
TSX_SPEC = f"{TSX_PACKAGE}@{TSX_VERSION}"
INSTALL_HINT = "axis agents install --typescript"
MARKER = ".axis-installed"
"""Written last by an install (the agent CLIs' convention): without it the folder is absent."""
STRIP_FLAGS = ("--experimental-strip-types", "--disable-warning=ExperimentalWarning")
LOADER_ENV = "AXIS_TS_LOADER"
_CHOICES = ("auto", "node", "tsx")
_PROBED: dict[str, bool] = {}


class TypeScriptUnavailable(PreflightError):
    """Neither Node's type stripping nor the pinned tsx loader is available (exit 2)."""


class LoaderInstallError(AxisError):
    """npm could not install the pinned tsx (exit 1, as a failed agent CLI install)."""


def cache_dir() -> Path:
    """The pinned-tools folder: ``$AXIS_AGENTS_DIR``, else ``~/.cache/axis-eval/agents``.

    The same folder as :func:`axis_eval.adapters.install.agents_dir` (a test checks).
    """
    explicit = os.environ.get("AXIS_AGENTS_DIR")
    if explicit:
        return Path(explicit).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "axis-eval" / "agents"


def tsx_dir() -> Path:
    """Where the pinned tsx is (or would be) installed."""
    return cache_dir() / f"{TSX_PACKAGE}@{TSX_VERSION}"


def tsx_loader() -> Path | None:
    """The pinned tsx's ``--import`` entry, when a finished install is there."""
    folder = tsx_dir()
    entry = folder / "node_modules" / "tsx" / "dist" / "loader.mjs"
    if (folder / MARKER).is_file() and entry.is_file():
        return entry
    return None


def node_strips_types(node: str) -> bool:
    """Whether this Node runs ``.ts`` with :data:`STRIP_FLAGS` (probed once per binary)."""
    if node not in _PROBED:
        try:
            done = run_helper([node, *STRIP_FLAGS, "-e", "0"], timeout_s=30.0)
            _PROBED[node] = done.returncode == 0
        except (HelperTimeout, OSError):
            _PROBED[node] = False
    return _PROBED[node]


def typescript_node_args(node: str) -> list[str]:
    """The argv to put between ``node`` and its script so ``import()`` of a ``.ts`` works.

    Either :data:`STRIP_FLAGS` or ``["--import", "file:///.../tsx/dist/loader.mjs"]``.

    Raises:
        TypeScriptUnavailable: ``AXIS_TS_LOADER`` is bad, or the chosen way is missing;
            the hint says how to install the loader.
    """
    choice = (os.environ.get(LOADER_ENV) or "auto").strip().lower()
    if choice not in _CHOICES:
        raise TypeScriptUnavailable(
            f"{LOADER_ENV}={choice!r} is not a TypeScript loader",
            hint=f"use one of {', '.join(_CHOICES)}",
        )
    if choice != "tsx" and node_strips_types(node):
        return list(STRIP_FLAGS)
    if choice == "node":
        raise TypeScriptUnavailable(
            f"{LOADER_ENV}=node, but this Node ({node}) cannot strip TypeScript types",
            hint="Node >= 22.6 has type stripping; or unset it to use the pinned tsx "
            f"(`{INSTALL_HINT}`)",
        )
    loader = tsx_loader()
    if loader is None:
        raise TypeScriptUnavailable(
            f"running TypeScript needs Node >= 22.6 or the pinned {TSX_SPEC} loader, "
            f"which is not installed in {tsx_dir().parent}: run `{INSTALL_HINT}`",
            hint=f"`{INSTALL_HINT}` installs {TSX_SPEC} there (the folder is "
            "$AXIS_AGENTS_DIR); or convert the file to JavaScript, JSON or YAML",
        )
    return ["--import", loader.as_uri()]


def install_tsx(*, force: bool = False, log: Callable[[str], None] = lambda line: None) -> Path:
    """Install the pinned tsx into :func:`tsx_dir` (unless there already); its loader path.

    Raises:
        LoaderInstallError: npm is missing, fails or times out.
    """
    existing = tsx_loader()
    if existing is not None and not force:
        return existing
    npm = shutil.which("npm")
    if npm is None:
        raise LoaderInstallError("npm is not on PATH", hint="install Node.js and npm")
    folder = tsx_dir()
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    log(f"installing {TSX_SPEC} into {folder}")
    argv = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
            "--loglevel=error", TSX_SPEC]  # fmt: skip
    try:
        done = run_helper(argv, cwd=str(folder), timeout_s=900.0)
    except HelperTimeout as exc:
        raise LoaderInstallError(f"npm install {TSX_SPEC} timed out") from exc
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip())[-1500:]
        raise LoaderInstallError(f"npm install {TSX_SPEC} failed:\n{tail}")
    atomic_write_text(folder / MARKER, TSX_SPEC + "\n")
    loader = tsx_loader()
    if loader is None:
        raise LoaderInstallError(f"{TSX_SPEC} installed but has no dist/loader.mjs")
    return loader
