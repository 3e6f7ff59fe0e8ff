"""The one atomic writer (harness reports and caches, the task runner's markers)."""

from __future__ import annotations

import stat
from pathlib import Path

from axis_eval.files import atomic_write_bytes, atomic_write_text


def test_writes_are_private_unless_a_mode_is_given(tmp_path: Path) -> None:
    private = tmp_path / "new" / "folder" / "a.json"  # missing folders are created
    atomic_write_text(private, "{}\n")
    assert private.read_text() == "{}\n"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    shared = tmp_path / "marker"
    atomic_write_bytes(shared, b"done", durable=True, mode=0o644)
    assert shared.read_bytes() == b"done"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marker", "new"]  # no leftovers
