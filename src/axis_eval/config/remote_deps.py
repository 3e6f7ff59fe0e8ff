"""A remote scenario source's Node dependencies, installed as AXIS does (its JS/TS config
may import packages), but without running the repository's install scripts.

AXIS installs them when the clone has a ``package.json`` and no ``node_modules``: with
pnpm when there is a ``pnpm-lock.yaml``, yarn for a ``yarn.lock``, else npm, for at most
5 minutes, a failure only logged. We do the same with the package manager's scripts off
(``--ignore-scripts``): the clone is someone else's code, and an install script would run
on this machine, outside every sandbox, before anything is asked.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from axis_eval._util.processes import (
    HelperOutputTooLarge,
    HelperStopped,
    HelperTimeout,
    run_helper,
)
from axis_eval.errors import Interrupted

__all__ = ["INSTALL_TIMEOUT_S", "install_dependencies"]

INSTALL_TIMEOUT_S = 300.0
_MAX_OUTPUT = 4 * 1024 * 1024


def _command(clone: Path) -> list[str] | None:
    """The install command for ``clone``'s lock file, when its package manager is here."""
    if (clone / "pnpm-lock.yaml").is_file() and shutil.which("pnpm"):
        return ["pnpm", "install", "--prefer-offline", "--ignore-scripts"]
    if (clone / "yarn.lock").is_file() and shutil.which("yarn"):
        return ["yarn", "install", "--prefer-offline", "--ignore-scripts"]
    if shutil.which("npm"):
        return ["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"]
    return None


def install_dependencies(clone: Path, url: str, say: Callable[[str], None] | None) -> bool:
    """Install ``clone``'s dependencies if it has a ``package.json`` and no
    ``node_modules``; whether an install ran and succeeded. Failures are said, not raised."""
    if not (clone / "package.json").is_file() or (clone / "node_modules").exists():
        return False
    argv = _command(clone)
    if argv is None:
        if say is not None:
            say(f"warning: {url}: has a package.json, but no npm is on PATH to install it")
        return False
    if say is not None:
        say(f"Installing dependencies of remote scenarios: {url} ({argv[0]}, no scripts)")
    try:
        done = run_helper(
            argv,
            cwd=str(clone),
            env={
                **os.environ,
                "npm_config_ignore_scripts": "true",
                "npm_config_update_notifier": "false",
            },
            timeout_s=INSTALL_TIMEOUT_S,
            max_output_bytes=_MAX_OUTPUT,
            stop_on_signals=True,
        )
    except HelperStopped as exc:
        raise Interrupted(exc.signal_name) from None
    except (HelperTimeout, HelperOutputTooLarge, OSError) as exc:
        if say is not None:
            say(f"warning: {url}: installing its dependencies failed ({type(exc).__name__})")
        return False
    if done.returncode != 0:
        if say is not None:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
            say(f"warning: {url}: `{' '.join(argv[:2])}` exited {done.returncode}: {last}")
        return False
    return True
