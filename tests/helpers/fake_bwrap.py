"""A FAKE of a bubblewrap that cannot bound a tmpfs, which this machine does not have (0.6.1,
what Ubuntu 22.04 ships, or a setuid install of a later one): a script that runs the real
bwrap and refuses ``--size`` with the message such a bwrap prints."""

from __future__ import annotations

import shutil
from pathlib import Path

UNKNOWN_SIZE = "Unknown option --size"
"""What bubblewrap before 0.7 prints for ``--size``."""

_SCRIPT = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = "--size" ]; then echo "bwrap: {message}" >&2; exit 1; fi
done
exec {real} "$@"
"""


def unsized_bwrap(folder: Path, message: str = UNKNOWN_SIZE) -> Path:
    """Write ``folder/bwrap`` (the fake; put ``folder`` first on ``PATH``); ``folder``."""
    real = shutil.which("bwrap")
    assert real is not None, "the fake wraps the real bwrap"
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(_SCRIPT.format(real=real, message=message))
    fake.chmod(0o755)
    return folder
