"""Real agent CLIs (claude-code, codex, gemini) against the scripted model server on 127.0.0.1.

The CLIs come from the pinned cache (``AXIS_AGENTS_DIR``, default ``<repo>/.cache/agents``);
a missing one is installed with ``axis_eval.adapters.install.install`` on first use. When
that is impossible (no npm, no network) the tests needing it are skipped with a loud
reason, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import (
    REPO,
    ensure_cli,
)


@pytest.fixture(scope="session")
def agents_dir() -> Iterator[Path]:
    """``AXIS_AGENTS_DIR`` for the whole session: the env value, else ``<repo>/.cache/agents``."""
    old = os.environ.get("AXIS_AGENTS_DIR")
    folder = Path(old) if old else REPO / ".cache" / "agents"
    os.environ["AXIS_AGENTS_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("AXIS_AGENTS_DIR", None)
    else:
        os.environ["AXIS_AGENTS_DIR"] = old


@pytest.fixture
def claude_cli(agents_dir: Path) -> Path:
    return ensure_cli("claude-code")


@pytest.fixture
def codex_cli(agents_dir: Path) -> Path:
    return ensure_cli("codex")


@pytest.fixture
def gemini_cli(agents_dir: Path) -> Path:
    return ensure_cli("gemini")
